import { describe, expect, it } from "@jest/globals";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sandbox } from "@mom/sandbox";
import { createApplyPatchTool } from "./apply-patch-tool.js";
import { mainThreadCpu } from "@mom/testing";

function setup(settings: { maxOutputBytes?: number } = {}) {
  const root = mkdtempSync(join(tmpdir(), "mom-patch-"));
  const workspaceDir = join(root, "workspace");
  const cwd = join(workspaceDir, "channels", "cli", "local");
  const other = join(workspaceDir, "channels", "cli", "other");
  mkdirSync(cwd, { recursive: true });
  mkdirSync(other, { recursive: true });
  writeFileSync(join(cwd, "a.txt"), "one\ntwo\nthree\n");
  writeFileSync(join(cwd, "b.txt"), "alpha\nbeta\ngamma\n");
  writeFileSync(join(other, "notes.txt"), "private\n");
  const sandbox = new Sandbox({ type: "host", ...settings }, { dataDir: root, workspaceDir }).forChannel(cwd);
  const tool = createApplyPatchTool(sandbox);
  const apply = (patch: string) => tool.execute("call-1", { patch }, undefined, undefined, undefined as never);
  const read = (f: string) => readFileSync(join(cwd, f), "utf8");
  return { cwd, other, apply, read, sandbox };
}

const twoFiles = (bHunk: string) => `diff --git a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
--- a/b.txt
+++ b/b.txt
${bHunk}`;

describe("apply_patch", () => {
  it("applies a multi-file patch (git's a/ b/ paths) and creates a new file, saying what changed", async () => {
    const t = setup();
    const patch = `${twoFiles("@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n")}--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1,2 @@
+# New
+made by a patch
`;
    const r = await t.apply(patch);
    expect(r.content[0]).toMatchObject({ text: "Applied 3 hunks to 3 files: a.txt (+1 −1), b.txt (+1 −1), docs/new.md (+2 −0, new)" });
    expect(t.read("a.txt")).toBe("one\nTWO\nthree\n");
    expect(t.read("b.txt")).toBe("alpha\nBETA\ngamma\n");
    expect(t.read("docs/new.md")).toBe("# New\nmade by a patch\n");
  });

  it("a hunk that does not fit changes nothing, and the error names the file and the hunk", async () => {
    const t = setup();
    const bad = twoFiles("@@ -1,3 +1,3 @@\n alpha\n-delta\n+DELTA\n gamma\n");
    await expect(t.apply(bad)).rejects.toThrow('b.txt: hunk 1 of 1 (@@ -1,3 +1,3 @@) does not apply: the file has no "alpha" near line 1. Nothing was changed.');
    expect(t.read("a.txt")).toBe("one\ntwo\nthree\n"); // the first file's good hunk was not written either
    expect(t.read("b.txt")).toBe("alpha\nbeta\ngamma\n");
  });

  it("stays inside the channel's view: another channel's file, a symlink out, deletes and garbage are refused", async () => {
    const t = setup();
    const other = `--- ${join(t.other, "notes.txt")}\n+++ ${join(t.other, "notes.txt")}\n@@ -1 +1 @@\n-private\n+owned\n`;
    await expect(t.apply(other)).rejects.toThrow();
    expect(readFileSync(join(t.other, "notes.txt"), "utf8")).toBe("private\n");
    symlinkSync(join(t.other, "notes.txt"), join(t.cwd, "link.txt"));
    await expect(t.apply("--- a/link.txt\n+++ b/link.txt\n@@ -1 +1 @@\n-private\n+owned\n")).rejects.toThrow();
    expect(readFileSync(join(t.other, "notes.txt"), "utf8")).toBe("private\n");
    await expect(t.apply("--- a/a.txt\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-one\n-two\n-three\n")).rejects.toThrow(/deleting files is not what apply_patch does/);
    // A FIFO the model made in its own directory: refused at once, not read forever.
    execFileSync("mkfifo", [join(t.cwd, "pipe.txt")]);
    await expect(t.apply("--- a/pipe.txt\n+++ b/pipe.txt\n@@ -1 +1 @@\n-x\n+y\n")).rejects.toThrow();
    await expect(t.apply("please change a.txt")).rejects.toThrow(/the patch has no hunks/);
    expect(t.read("a.txt")).toBe("one\ntwo\nthree\n");
  });

  // Each file may be as large as one read may return (sandbox.maxOutputBytes, 16 MiB), and the
  // tool holds every file of the patch (its bytes, its text and the patched text) until it writes.
  // Sparse files cost the channel no disk, and a patch of a few kilobytes can name hundreds of
  // them: 200 files of 16 MiB were ~10 GB in the runner, past Node's heap, and the runner died with
  // every channel's run. Here the cap is 1 MiB and the patch names eight files of 512 KiB.
  it("refuses a patch whose files together are more than one read may return, before it holds them all", async () => {
    const t = setup({ maxOutputBytes: 1024 * 1024 });
    const names = Array.from({ length: 8 }, (_, i) => `sparse-${i}.bin`);
    for (const n of names) execFileSync("truncate", ["-s", "512K", join(t.cwd, n)]);
    const patch = names.map((n) => `--- a/${n}\n+++ b/${n}\n@@ -0,0 +1 @@\n+x\n`).join("");
    await expect(t.apply(patch)).rejects.toThrow(/more than 1 MB .*in all.*split it/);
    for (const n of names) expect(readFileSync(join(t.cwd, n)).subarray(0, 1)[0]).toBe(0);
    // One patch within the cap still applies.
    await t.apply(names.slice(0, 1).map((n) => `--- a/${n}\n+++ b/${n}\n@@ -0,0 +1 @@\n+x\n`).join(""));
    expect(readFileSync(join(t.cwd, names[0]!), "utf8").slice(0, 2)).toBe("x\n");
  });

  // The diff library tries a hunk at every line of the file, comparing up to all its lines at
  // each, synchronously on the runner's event loop, which serves every channel. A 200,000-line
  // file a command wrote and a 3 KB hunk of 1,000 of its lines that fits nowhere were 400 million
  // comparisons (seconds; a 16 MB file, minutes) before the call failed.
  it("gives up a hunk that would take the runner's event loop for seconds to fit", async () => {
    const root = mkdtempSync(join(tmpdir(), "mom-patch-bwrap-"));
    const workspaceDir = join(root, "workspace");
    const cwd = join(workspaceDir, "channels", "cli", "local");
    mkdirSync(cwd, { recursive: true });
    const sandbox = new Sandbox({ type: "bwrap" }, { dataDir: root, workspaceDir }).forChannel(cwd);
    const made = await sandbox.executor.exec({ command: "yes x | head -n 200000 > same.txt", onData: () => {} });
    expect(made.exitCode).toBe(0);
    const tool = createApplyPatchTool(sandbox);
    const patch = `--- a/same.txt\n+++ b/same.txt\n@@ -1,1001 +1,1001 @@\n${" x\n".repeat(1000)}-y\n+z\n`;
    const { result: outcome, cpuMs } = await mainThreadCpu(() => tool.execute("call-1", { patch }, undefined, undefined, undefined as never).catch((err: Error) => err));
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toMatch(/^same\.txt: fitting the patch's hunks took more than 10,000,000 line comparisons .* Nothing was changed\.$/);
    // The cap's 10 million comparisons are the runner's thread's own work: 0.47 s alone, 1.05 s in
    // the loaded full suite; without the cap the 400 million took some 19 s alone.
    expect(cpuMs).toBeLessThan(5000);
    expect(readFileSync(join(cwd, "same.txt"), "utf8")).toBe("x\n".repeat(200000));
    rmSync(root, { recursive: true, force: true });
  }, 60_000);
});
