import { describe, expect, it } from "@jest/globals";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { downloadFile } from "./file-download.js";

describe("downloadFile", () => {
  it("sends the token, prefers the declared type, refuses what is not the file, and stops past maxBytes", async () => {
    const server = createServer((req, res) => {
      if (req.headers.authorization !== "Bearer t0k") return void res.writeHead(401).end();
      if (req.url === "/page") return void res.writeHead(200, { "content-type": "text/html" }).end("<html>sign in</html>");
      res.writeHead(200, { "content-type": "application/octet-stream" }).end("hello");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      expect(await downloadFile(`${base}/f`, 100, { token: "t0k" })).toEqual({ bytes: new TextEncoder().encode("hello"), mimeType: "application/octet-stream" });
      expect((await downloadFile(`${base}/f`, 100, { token: "t0k", mimeType: "text/plain" })).mimeType).toBe("text/plain");
      await expect(downloadFile(`${base}/f`, 100)).rejects.toThrow("download failed: HTTP 401");
      await expect(downloadFile(`${base}/f`, 3, { token: "t0k" })).rejects.toThrow(/^too large/);
      const refuse = (res: Response) => (res.headers.get("content-type") === "text/html" ? "a sign-in page" : undefined);
      await expect(downloadFile(`${base}/page`, 100, { token: "t0k", refuse })).rejects.toThrow("a sign-in page");
      expect((await downloadFile(`${base}/f`, 100, { token: "t0k", refuse })).bytes).toHaveLength(5);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("stops when its signal aborts, whether the server has not answered or is sending the body", async () => {
    const server = createServer((req, res) => {
      if (req.url === "/trickle") {
        res.writeHead(200, { "content-type": "application/octet-stream" });
        res.write("a");
      } // "/silent": never answers
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      for (const path of ["/silent", "/trickle"]) {
        const giveUp = new AbortController();
        setTimeout(() => giveUp.abort(), 200);
        await expect(downloadFile(`${base}${path}`, 100, { signal: giveUp.signal })).rejects.toThrow(/abort/i);
      }
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
