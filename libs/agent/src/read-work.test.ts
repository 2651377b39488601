import { afterAll, describe, expect, it } from "@jest/globals";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createReadToolDefinition } from "@mariozechner/pi-coding-agent";
import { Sandbox } from "@mom/sandbox";
import { createMomTools, MAX_READ_TEXT_BYTES } from "./labelled-tools.js";

const MiB = 1024 * 1024;
const REPO = fileURLToPath(new URL("../../..", import.meta.url));
const roots: string[] = [];
afterAll(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

function channelDirs() {
  const root = mkdtempSync(join(tmpdir(), "mom-read-work-"));
  roots.push(root);
  const workspaceDir = join(root, "workspace");
  const dir = join(workspaceDir, "channels", "cli", "a");
  mkdirSync(dir, { recursive: true });
  return { root, workspaceDir, dir };
}

/** One channel and its read tool as the runner builds it. */
function channel() {
  const { root, workspaceDir, dir } = channelDirs();
  const sandbox = new Sandbox({ type: "host" }, { dataDir: root, workspaceDir }).forChannel(dir);
  const read = createMomTools(sandbox, join(dir, "scratch")).find((t) => t.name === "read")!;
  const run = (params: { path: string; offset?: number; limit?: number }) =>
    read.execute("call-1", { label: "look", ...params }, undefined, undefined, undefined as never).catch((err: Error) => err);
  return { dir, run };
}

// What the runner does for one `read` call of the channel's file, in a node of its own whose heap
// is 128 MB (the runner's pod has 2 GiB for every channel): built code, so `npx tsc -b` first.
const CHILD = `
import { join } from "node:path";
import { Sandbox } from "@mom/sandbox";
import { createMomTools } from "@mom/agent";
const [root, dir, path] = process.argv.slice(1);
const sandbox = new Sandbox({ type: "host" }, { dataDir: root, workspaceDir: join(root, "workspace") }).forChannel(dir);
const read = createMomTools(sandbox, join(dir, "scratch")).find((t) => t.name === "read");
const result = await read.execute("call-1", { label: "look", path }).catch((err) => ({ error: err.message }));
const text = result.error ?? result.content[0].text;
console.log(JSON.stringify({ error: result.error, lines: text.split("\\n").length, end: text.slice(-120) }));
`;

function readInSmallHeap(file: string, bytes: Buffer) {
  const { root, dir } = channelDirs();
  writeFileSync(join(dir, file), bytes);
  const child = spawnSync(process.execPath, ["--max-old-space-size=128", "--input-type=module", "-e", CHILD, root, dir, file], { cwd: REPO, encoding: "utf8", timeout: 60_000 });
  return { status: child.status, signal: child.signal, stderr: /FATAL ERROR.*/.exec(child.stderr)?.[0] ?? child.stderr.slice(-400), out: child.stdout.trim() ? JSON.parse(child.stdout.trim()) : undefined };
}

describe("read", () => {
  // pi's read turns the whole file into an array of lines (and copies, joins and splits it again)
  // synchronously on the runner's event loop, to show 2,000 lines of it. A 16 MiB file of newlines
  // (the sandbox's whole-file cap; a command writes it in a moment) held ~400 MB of heap and that
  // loop for ~1 s per call: a node with a 256 MB heap died of one, so a few such calls at once
  // could take the runner, and every channel it serves, down.
  it("refuses a text file too big to split into lines in the runner, in a node with a 128 MB heap", () => {
    const hostile = readInSmallHeap("newlines.txt", Buffer.alloc(16 * MiB, "\n"));
    expect({ status: hostile.status, signal: hostile.signal, stderr: hostile.status === 0 ? "" : hostile.stderr }).toEqual({ status: 0, signal: null, stderr: "" });
    expect(hostile.out.error).toBe(
      "newlines.txt: too large for the read tool (16 MB; it takes text files of at most 1 MB). Read parts of it with bash: sed -n '1,200p' newlines.txt, head, tail or grep.",
    );
    // The worst file read still takes — its cap, all newlines — fits the same heap with room to spare.
    const worst = readInSmallHeap("worst.txt", Buffer.alloc(MAX_READ_TEXT_BYTES, "\n"));
    expect({ status: worst.status, signal: worst.signal, stderr: worst.status === 0 ? "" : worst.stderr }).toEqual({ status: 0, signal: null, stderr: "" });
    expect(worst.out).toEqual({ lines: 2002, end: expect.stringMatching(/\[Showing lines 1-2000 of 1048577\. Use offset=2001 to continue\.\]$/) });
  }, 120_000);

  it("gives a text file of usual size exactly what pi's own read gives, offset and limit included", async () => {
    const c = channel();
    const lines = Array.from({ length: 30_000 }, (_, i) => `line ${i + 1} ${"x".repeat(i % 40)}`).join("\n");
    writeFileSync(join(c.dir, "log.txt"), lines);
    writeFileSync(join(c.dir, "full.txt"), Buffer.alloc(MAX_READ_TEXT_BYTES, "\n"));
    const pi = createReadToolDefinition(c.dir);
    for (const params of [{ path: "log.txt" }, { path: "log.txt", offset: 25_000 }, { path: "log.txt", offset: 100, limit: 10 }, { path: "full.txt", offset: 1_000_000 }]) {
      const ours = await c.run(params);
      expect(ours).not.toBeInstanceOf(Error);
      expect((ours as { content: unknown }).content).toEqual((await pi.execute("call-1", params, undefined, undefined, undefined as never)).content);
    }
    writeFileSync(join(c.dir, "over.txt"), Buffer.alloc(MAX_READ_TEXT_BYTES + 1, "a"));
    expect(((await c.run({ path: "over.txt", offset: 1 })) as Error).message).toMatch(/^over\.txt: too large for the read tool \(1 MB; it takes text files of at most 1 MB\)/);
  });

  it("still reads an image bigger than the text cap, as an image", async () => {
    const c = channel();
    // A 1x1 PNG header, then padding: 2 MiB on disk.
    const png = Buffer.alloc(2 * MiB);
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]).copy(png);
    png.write("IHDR", 12, "latin1");
    png.writeUInt32BE(1, 16);
    png.writeUInt32BE(1, 20);
    writeFileSync(join(c.dir, "pic.png"), png);
    const r = (await c.run({ path: "pic.png" })) as { content: { type: string; mimeType?: string }[] };
    expect(r.content.map((x) => x.type)).toEqual(["text", "image"]);
    expect(r.content[1]!.mimeType).toBe("image/png");
  });
});
