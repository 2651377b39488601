import { describe, expect, it } from "@jest/globals";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAttachCommand, readUpload } from "./cli-files.js";

describe("parseAttachCommand", () => {
  it("splits /attach <path> [text]", () => {
    expect(parseAttachCommand("/attach report.pdf please review")).toEqual({ path: "report.pdf", text: "please review" });
    expect(parseAttachCommand("  /attach ./a/b.png  ")).toEqual({ path: "./a/b.png", text: "" });
    expect(parseAttachCommand("/attach")).toEqual({ path: "", text: "" });
  });

  it("leaves other lines alone", () => {
    expect(parseAttachCommand("/attachment x")).toBeUndefined();
    expect(parseAttachCommand("please /attach x")).toBeUndefined();
    expect(parseAttachCommand("hello")).toBeUndefined();
  });
});

describe("readUpload", () => {
  it("reads a file relative to cwd with its name and type, and explains what is wrong otherwise", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-cli-up-"));
    writeFileSync(join(dir, "a.png"), "png");
    writeFileSync(join(dir, "big.bin"), Buffer.alloc(2048));
    await expect(readUpload("a.png", dir, 1024)).resolves.toMatchObject({ filename: "a.png", mimeType: "image/png", size: 3 });
    await expect(readUpload("missing.txt", dir, 1024)).rejects.toThrow("no such file");
    await expect(readUpload(".", dir, 1024)).rejects.toThrow("is a directory");
    await expect(readUpload("big.bin", dir, 1024)).rejects.toThrow("too large (2 KB > 1 KB limit)");
  });
});
