import { afterAll, describe, expect, it } from "@jest/globals";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PathRefusedError } from "./confined-files.js";
import { Sandbox } from "./sandbox.js";
import { makeDataDir } from "./test-support.js";

const dirs = makeDataDir();
// A shared writer (sandbox.sharedWriters), so the shared paths are writable; shared-writers.test.ts has the others.
const { files } = new Sandbox({ type: "host", maxOutputBytes: 1024 * 1024, sharedWriters: ["cli/a"] }, dirs).forChannel(dirs.channelA, [], "cli/a");
afterAll(() => rmSync(dirs.dataDir, { recursive: true, force: true }));

const HIDDEN = /not visible to this channel/;
const READ_ONLY = /read-only for this channel/;

describe("ConfinedFiles: reading", () => {
  it("reads the channel's own files, relative or absolute, and the shared and system files", async () => {
    writeFileSync(join(dirs.channelA, "notes.txt"), "mine");
    expect((await files.readFile("notes.txt")).toString()).toBe("mine");
    expect((await files.readFile(join(dirs.channelA, "notes.txt"))).toString()).toBe("mine");
    expect((await files.readFile(join(dirs.workspaceDir, "tools/x/index.mjs"))).toString()).toContain("export default");
    expect((await files.readFile("/etc/hostname")).length).toBeGreaterThan(0);
  });

  it.each([
    ["../b/log.jsonl", HIDDEN],
    ["../../../../config.json", HIDDEN],
    ["../../../../auth.json", HIDDEN],
    ["/etc/shadow", HIDDEN],
    [`/proc/${process.pid}/environ`, HIDDEN],
    ["/root/.bashrc", HIDDEN],
    ["/tmp", HIDDEN],
  ])("refuses %s", async (path, why) => {
    await expect(files.readFile(path)).rejects.toThrow(why);
  });

  it("refuses another channel's file even when it does not exist, without saying so", async () => {
    await expect(files.readFile("../b/nothing-here")).rejects.toThrow(HIDDEN);
  });

  it("follows a symlink only to where it really points, and judges that place", async () => {
    symlinkSync("/etc", join(dirs.channelA, "etc-link"));
    symlinkSync(join(dirs.channelB, "log.jsonl"), join(dirs.channelA, "b-log"));
    symlinkSync(join(dirs.dataDir, "config.json"), join(dirs.channelA, "config-link"));
    symlinkSync(dirs.channelB, join(dirs.channelA, "b-dir"));
    expect((await files.readFile("etc-link/hostname")).length).toBeGreaterThan(0); // /etc is read-only but visible
    await expect(files.readFile("etc-link/shadow")).rejects.toThrow(HIDDEN);
    await expect(files.readFile("b-log")).rejects.toThrow(HIDDEN);
    await expect(files.readFile("config-link")).rejects.toThrow(HIDDEN);
    await expect(files.readFile("b-dir/MEMORY.md")).rejects.toThrow(HIDDEN);
  });

  it("refuses a FIFO at once instead of waiting for a writer", async () => {
    execFileSync("mkfifo", [join(dirs.channelA, "pipe")]);
    const started = Date.now();
    // More reads than libuv has threads: if one blocked, the rest would hang.
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => files.readFile("pipe")));
    expect(results.every((r) => r.status === "rejected" && /not a regular file/.test(String(r.reason)))).toBe(true);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("refuses devices and files over the read limit", async () => {
    symlinkSync("/dev/zero", join(dirs.channelA, "zero"));
    await expect(files.readFile("zero")).rejects.toThrow(HIDDEN); // /dev is not in the view at all
    execFileSync("truncate", ["-s", "5M", join(dirs.channelA, "big.bin")]);
    await expect(files.readFile("big.bin")).rejects.toThrow(/too large to read whole \(5242880 bytes; the limit is 1048576\)/);
    expect((await files.readHead("big.bin", 4)).length).toBe(4);
  });

  it("gives errors of its own type, written for the model", async () => {
    await expect(files.readFile("missing.txt")).rejects.toBeInstanceOf(PathRefusedError);
    await expect(files.readFile("missing.txt")).rejects.toThrow("missing.txt: no such file or directory");
  });
});

describe("ConfinedFiles: writing", () => {
  it("writes and creates directories in the channel and the shared paths", async () => {
    await files.mkdir("scratch/deep/er");
    await files.writeFile("scratch/deep/er/out.txt", "hello");
    expect(readFileSync(join(dirs.channelA, "scratch/deep/er/out.txt"), "utf8")).toBe("hello");
    await files.writeFile(join(dirs.workspaceDir, "MEMORY.md"), "global");
    await files.mkdir(join(dirs.workspaceDir, "skills/new-skill"));
    await files.writeFile(join(dirs.workspaceDir, "skills/new-skill/SKILL.md"), "---\n");
    expect(readFileSync(join(dirs.workspaceDir, "MEMORY.md"), "utf8")).toBe("global");
  });

  it("overwrites a longer file completely", async () => {
    await files.writeFile("short.txt", "a much longer first version");
    await files.writeFile("short.txt", "v2");
    expect(readFileSync(join(dirs.channelA, "short.txt"), "utf8")).toBe("v2");
  });

  it.each([
    ["../b/MEMORY.md", HIDDEN],
    ["../../../../config.json", HIDDEN],
    ["../../../tools/x/index.mjs", READ_ONLY],
    ["/etc/passwd", READ_ONLY],
    ["/usr/local/evil", READ_ONLY],
  ])("refuses to write %s", async (path, why) => {
    await expect(files.writeFile(path, "x")).rejects.toThrow(why);
  });

  it("refuses to create or change custom tools", async () => {
    await expect(files.writeFile(join(dirs.workspaceDir, "tools/x/index.mjs"), "evil")).rejects.toThrow(READ_ONLY);
    await expect(files.mkdir(join(dirs.workspaceDir, "tools/y"))).rejects.toThrow(READ_ONLY);
    expect(existsSync(join(dirs.workspaceDir, "tools/y"))).toBe(false);
    expect(readFileSync(join(dirs.workspaceDir, "tools/x/index.mjs"), "utf8")).toBe("export default {};\n");
  });

  it("never writes through a symlink out of the channel", async () => {
    symlinkSync(join(dirs.channelB, "MEMORY.md"), join(dirs.channelA, "b-memory"));
    symlinkSync(join(dirs.workspaceDir, "tools"), join(dirs.channelA, "tools-link"));
    symlinkSync(join(dirs.channelB, "planted"), join(dirs.channelA, "dangling"));
    await expect(files.writeFile("b-memory", "x")).rejects.toThrow(HIDDEN);
    await expect(files.writeFile("tools-link/x/index.mjs", "x")).rejects.toThrow(READ_ONLY);
    await expect(files.writeFile("dangling", "x")).rejects.toThrow(/symlink to a missing file/);
    await expect(files.mkdir("tools-link/z")).rejects.toThrow(READ_ONLY);
    expect(readFileSync(join(dirs.channelB, "MEMORY.md"), "utf8")).toBe("b's memory\n");
    expect(existsSync(join(dirs.channelB, "planted"))).toBe(false);
  });

  it("refuses to write a FIFO", async () => {
    execFileSync("mkfifo", [join(dirs.channelA, "wpipe")]);
    await expect(files.writeFile("wpipe", "x")).rejects.toThrow(/not a regular file|ENXIO/);
  });
});
