import { afterAll, describe, expect, it } from "@jest/globals";
import { execFileSync } from "node:child_process";
import { existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LogEntry } from "@mom/contracts";
import { listDir, openBeneath, openDirBeneath, readBeneath, readTailBeneath, RefusedPathError, writeFileAtomicBeneath, writeNewFileBeneath } from "./beneath.js";
import { writeNewFile } from "./attachment-files.js";
import { ChannelStore } from "./channel-store.js";

const base = mkdtempSync(join(tmpdir(), "mom-beneath-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));
let n = 0;

/** A channel directory and an outside directory (another channel's skills, a host directory). */
function fixture() {
  const root = join(base, `t${++n}`);
  const channel = join(root, "channels", "cli", "a");
  const target = join(root, "target");
  mkdirSync(channel, { recursive: true });
  mkdirSync(target, { recursive: true });
  writeFileSync(join(target, "SKILL.md"), "theirs\n");
  return { channel, target };
}

const SYMLINK = /is a symlink/;

describe("beneath: writes never leave the root", () => {
  it("refuses a directory component that is a symlink, and writes nothing in its target", async () => {
    const { channel, target } = fixture();
    symlinkSync(target, join(channel, "attachments"));
    await expect(writeNewFileBeneath(channel, "attachments", "x.txt", Buffer.from("evil"))).rejects.toThrow(SYMLINK);
    await expect(writeNewFileBeneath(channel, "attachments", "x.txt", Buffer.from("evil"))).rejects.toBeInstanceOf(RefusedPathError);
    expect(readdirSync(target)).toEqual(["SKILL.md"]);
  });

  it("refuses a symlink deeper down (attachments/sub -> /), for reads too", async () => {
    const { channel, target } = fixture();
    mkdirSync(join(channel, "attachments"));
    symlinkSync(target, join(channel, "attachments", "sub"));
    await expect(writeNewFileBeneath(channel, "attachments/sub", "x.txt", Buffer.from("evil"))).rejects.toThrow("attachments/sub: is a symlink");
    await expect(readBeneath(channel, "attachments/sub/SKILL.md", 1000)).rejects.toThrow(SYMLINK);
    expect(readdirSync(target)).toEqual(["SKILL.md"]);
  });

  it("refuses a final file that is a symlink: no append, no read, no create through a dangling one", async () => {
    const { channel, target } = fixture();
    symlinkSync(join(target, "SKILL.md"), join(channel, "log.jsonl"));
    symlinkSync(join(target, "new.md"), join(channel, "dangling"));
    await expect(openBeneath(channel, "log.jsonl", "append")).rejects.toThrow(SYMLINK);
    await expect(openBeneath(channel, "log.jsonl", "read")).rejects.toThrow(SYMLINK);
    await expect(openBeneath(channel, "dangling", "write")).rejects.toThrow(SYMLINK);
    await expect(openBeneath(channel, "dangling", "create")).rejects.toThrow();
    expect(readFileSync(join(target, "SKILL.md"), "utf8")).toBe("theirs\n");
    expect(existsSync(join(target, "new.md"))).toBe(false);
  });

  it("a new file never replaces a planted symlink of the same name (writeNewFile takes the next name)", async () => {
    const { channel, target } = fixture();
    mkdirSync(join(channel, "attachments"));
    symlinkSync(join(target, "SKILL.md"), join(channel, "attachments", "a.md"));
    expect(await writeNewFile(join(channel, "attachments"), "a.md", Buffer.from("mine"))).toBe("a-2.md");
    expect(readFileSync(join(target, "SKILL.md"), "utf8")).toBe("theirs\n");
  });

  it("refuses FIFOs at once, for reading and writing, as a file or a directory", async () => {
    const { channel } = fixture();
    execFileSync("mkfifo", [join(channel, "context.jsonl"), join(channel, "skills")]);
    const started = Date.now();
    await expect(openBeneath(channel, "context.jsonl", "read")).rejects.toThrow("context.jsonl: is a FIFO, not a regular file");
    await expect(openBeneath(channel, "context.jsonl", "append")).rejects.toThrow(/FIFO/);
    await expect(openBeneath(channel, "context.jsonl", "write")).rejects.toThrow(/FIFO/);
    await expect(openDirBeneath(channel, "skills")).rejects.toThrow("skills: is a FIFO, not a directory");
    await expect(readBeneath(channel, "skills/x/SKILL.md", 100)).rejects.toThrow(/FIFO/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("refuses to write or append to a file with another hard link (another channel's file), but reads it", async () => {
    const { channel, target } = fixture();
    linkSync(join(target, "SKILL.md"), join(channel, "receipts.jsonl"));
    await expect(openBeneath(channel, "receipts.jsonl", "append")).rejects.toThrow(/2 hard links/);
    await expect(openBeneath(channel, "receipts.jsonl", "write")).rejects.toThrow(/2 hard links/);
    expect(readFileSync(join(target, "SKILL.md"), "utf8")).toBe("theirs\n");
    expect((await readBeneath(channel, "receipts.jsonl", 100))?.toString()).toBe("theirs\n");
  });

  it("refuses a symlink swapped in between two steps of the walk", async () => {
    const { channel, target } = fixture();
    mkdirSync(join(channel, "attachments"));
    const swap = (rel: string) => {
      if (rel !== "attachments") return;
      rmSync(join(channel, "attachments"), { recursive: true });
      symlinkSync(target, join(channel, "attachments"));
    };
    await expect(writeNewFileBeneath(channel, "attachments", "x.txt", Buffer.from("evil"), { beforeStep: swap })).rejects.toThrow(SYMLINK);
    expect(readdirSync(target)).toEqual(["SKILL.md"]);
  });

  it("a directory swapped for a symlink after it was opened keeps the write where the directory went, inside the root", async () => {
    const { channel, target } = fixture();
    mkdirSync(join(channel, "attachments"));
    const swap = (rel: string) => {
      if (rel !== "attachments/x.txt") return;
      renameSync(join(channel, "attachments"), join(channel, "moved"));
      symlinkSync(target, join(channel, "attachments"));
    };
    expect(await writeNewFileBeneath(channel, "attachments", "x.txt", Buffer.from("mine"), { beforeStep: swap })).toBe("x.txt");
    expect(readFileSync(join(channel, "moved", "x.txt"), "utf8")).toBe("mine");
    expect(readdirSync(target)).toEqual(["SKILL.md"]);
  });

  it("refuses when an opened directory was moved out of the root meanwhile", async () => {
    const { channel, target } = fixture();
    mkdirSync(join(channel, "attachments"));
    const moveOut = (rel: string) => {
      if (rel === "attachments/x.txt") renameSync(join(channel, "attachments"), join(target, "stolen"));
    };
    await expect(writeNewFileBeneath(channel, "attachments", "x.txt", Buffer.from("evil"), { beforeStep: moveOut })).rejects.toThrow(/not beneath the channel's directory/);
  });

  it("refuses paths that leave the root by name", async () => {
    const { channel } = fixture();
    await expect(openBeneath(channel, "../target/SKILL.md", "read")).rejects.toThrow(/not a path beneath/);
    await expect(openBeneath(channel, "/etc/passwd", "read")).rejects.toThrow(/not a path beneath/);
  });

  it("reads whole files up to a bound, tails, and says when something is missing", async () => {
    const { channel } = fixture();
    writeFileSync(join(channel, "MEMORY.md"), "0123456789");
    expect((await readBeneath(channel, "MEMORY.md", 10))?.toString()).toBe("0123456789");
    await expect(readBeneath(channel, "MEMORY.md", 9)).rejects.toThrow(/10 bytes, more than the 9/);
    expect(await readTailBeneath(channel, "MEMORY.md", 3)).toEqual({ data: Buffer.from("789"), size: 10 });
    expect(await readBeneath(channel, "nothing", 10)).toBeUndefined();
    expect(await readBeneath(channel, "no/dir/here", 10)).toBeUndefined();
  });

  it("lists a directory without following its symlinks, up to a bound", async () => {
    const { channel, target } = fixture();
    mkdirSync(join(channel, "skills", "a"), { recursive: true });
    writeFileSync(join(channel, "skills", "f.md"), "");
    symlinkSync("/", join(channel, "skills", "host"));
    execFileSync("mkfifo", [join(channel, "skills", ".gitignore")]);
    symlinkSync(target, join(channel, "skills", "t"));
    const dir = (await openDirBeneath(channel, "skills"))!;
    try {
      const { entries, truncated } = await listDir(dir, 100);
      expect(truncated).toBe(false);
      expect(Object.fromEntries(entries.map((e) => [e.name, e.kind]))).toEqual({ a: "directory", "f.md": "file", host: "symlink", ".gitignore": "other", t: "symlink" });
      expect((await listDir(dir, 2)).truncated).toBe(true);
    } finally {
      await dir.close();
    }
  });
});

describe("writeFileAtomicBeneath: whole or not at all, never over anything", () => {
  it("writes the file (making its directory) and leaves no temp file", async () => {
    const { channel } = fixture();
    await writeFileAtomicBeneath(channel, "events", "a.json", Buffer.from('{"x":1}'));
    expect(readFileSync(join(channel, "events", "a.json"), "utf8")).toBe('{"x":1}');
    expect(readdirSync(join(channel, "events"))).toEqual(["a.json"]);
    expect(lstatSync(join(channel, "events", "a.json")).nlink).toBe(1);
  });

  it("never replaces an existing file, a planted symlink or a FIFO of that name (EEXIST), and leaves no temp file", async () => {
    const { channel, target } = fixture();
    mkdirSync(join(channel, "events"));
    writeFileSync(join(channel, "events", "a.json"), "old");
    symlinkSync(join(target, "SKILL.md"), join(channel, "events", "b.json"));
    symlinkSync(join(target, "new.md"), join(channel, "events", "c.json"));
    execFileSync("mkfifo", [join(channel, "events", "d.json")]);
    for (const name of ["a.json", "b.json", "c.json", "d.json"]) {
      await expect(writeFileAtomicBeneath(channel, "events", name, Buffer.from("evil"))).rejects.toMatchObject({ code: "EEXIST" });
    }
    expect(readFileSync(join(channel, "events", "a.json"), "utf8")).toBe("old");
    expect(readFileSync(join(target, "SKILL.md"), "utf8")).toBe("theirs\n");
    expect(existsSync(join(target, "new.md"))).toBe(false);
    expect(readdirSync(join(channel, "events")).sort()).toEqual(["a.json", "b.json", "c.json", "d.json"]);
  });

  it("refuses a symlinked directory and names that leave it", async () => {
    const { channel, target } = fixture();
    symlinkSync(target, join(channel, "events"));
    await expect(writeFileAtomicBeneath(channel, "events", "a.json", Buffer.from("evil"))).rejects.toThrow("events: is a symlink");
    rmSync(join(channel, "events"));
    for (const name of ["../a.json", "/tmp/a.json", "x/a.json", ".hidden.json", ".."]) {
      await expect(writeFileAtomicBeneath(channel, "events", name, Buffer.from("evil"))).rejects.toBeInstanceOf(RefusedPathError);
    }
    expect(readdirSync(target)).toEqual(["SKILL.md"]);
    expect(readdirSync(join(channel, "events"))).toEqual([]);
  });
});

describe("ChannelStore through beneath", () => {
  const entry = (id: string): LogEntry => ({ id, date: "2026-01-01T00:00:00.000Z", user: "U1", userName: "ann", text: id, attachments: [], isBot: false });

  it("never appends through a planted log.jsonl symlink; prepareFiles moves it aside and says so", async () => {
    const { channel, target } = fixture();
    const store = new ChannelStore({ adapter: "cli", channelId: "a" }, channel, join(channel, "..", "MEMORY.md"));
    const problems: string[] = [];
    store.onFileProblem = (p) => problems.push(p);
    symlinkSync(join(target, "SKILL.md"), join(channel, "log.jsonl"));
    await expect(store.appendLog(entry("m1"))).rejects.toThrow(SYMLINK);
    expect(readFileSync(join(target, "SKILL.md"), "utf8")).toBe("theirs\n");
    await store.prepareFiles();
    expect(problems).toEqual([expect.stringMatching(/^log\.jsonl: is a symlink .*moved aside to log\.jsonl\.refused-\d+/)]);
    expect(lstatSync(join(channel, "log.jsonl")).isFile()).toBe(true);
    expect(await store.appendLog(entry("m1"))).toBe(true);
    expect(readFileSync(join(target, "SKILL.md"), "utf8")).toBe("theirs\n");
  });

  it("jobs.jsonl: never written through a planted symlink or a hard link to another channel's file, never emptied through one; prepareFiles makes it anew", async () => {
    const { channel, target } = fixture();
    const store = new ChannelStore({ adapter: "cli", channelId: "a" }, channel, join(channel, "..", "MEMORY.md"));
    const problems: string[] = [];
    store.onFileProblem = (p) => problems.push(p);
    const started = { type: "started", id: "job-1", execId: "e1", command: "make", startedAt: "2026-01-01T00:00:00.000Z", runner: "r1", host: "h", startedBy: { id: "u", username: "ann" } } as const;
    symlinkSync(join(target, "SKILL.md"), join(channel, "jobs.jsonl"));
    await expect(store.appendJobRecord(started)).rejects.toThrow(SYMLINK);
    await expect(store.compactJobRecords()).rejects.toThrow(SYMLINK);
    await expect(store.readRunningJobs()).rejects.toThrow(SYMLINK);
    expect(readFileSync(join(target, "SKILL.md"), "utf8")).toBe("theirs\n");
    await store.prepareFiles();
    expect(problems).toEqual([expect.stringMatching(/^jobs\.jsonl: is a symlink .*moved aside to jobs\.jsonl\.refused-\d+/)]);
    await store.appendJobRecord(started);
    expect((await store.readRunningJobs()).running).toEqual([started]);
    await store.appendJobRecord({ type: "ended", id: "job-1", endedAt: "2026-01-01T00:01:00.000Z" });
    expect((await store.readRunningJobs()).running).toEqual([]);
    await store.compactJobRecords();
    expect(readFileSync(join(channel, "jobs.jsonl"), "utf8")).toBe("");

    rmSync(join(channel, "jobs.jsonl"));
    linkSync(join(target, "SKILL.md"), join(channel, "jobs.jsonl"));
    await expect(store.appendJobRecord(started)).rejects.toThrow(/link/);
    await expect(store.compactJobRecords()).rejects.toThrow(/link/);
    expect(readFileSync(join(target, "SKILL.md"), "utf8")).toBe("theirs\n");
    await expect(store.appendJobRecord({ ...started, id: "" })).rejects.toThrow("invalid job record for cli/a: /id");
  });

  it("a FIFO for context.jsonl is moved aside at once, and the context opened is a fresh regular file", async () => {
    const { channel } = fixture();
    const store = new ChannelStore({ adapter: "cli", channelId: "a" }, channel, join(channel, "..", "MEMORY.md"));
    const problems: string[] = [];
    store.onFileProblem = (p) => problems.push(p);
    execFileSync("mkfifo", [join(channel, "context.jsonl")]);
    const fh = await store.openContext();
    await fh.close();
    expect(lstatSync(join(channel, "context.jsonl")).isFile()).toBe(true);
    expect(problems).toEqual([expect.stringMatching(/^context\.jsonl: is a FIFO.*moved aside/)]);
  });

  it("a symlinked attachments/ is reported once and left alone; the log still works", async () => {
    const { channel, target } = fixture();
    const store = new ChannelStore({ adapter: "cli", channelId: "a" }, channel, join(channel, "..", "MEMORY.md"));
    const problems: string[] = [];
    store.onFileProblem = (p) => problems.push(p);
    symlinkSync(target, join(channel, "attachments"));
    expect(await store.appendLog(entry("m1"))).toBe(true);
    expect(problems).toEqual([expect.stringMatching(/^attachments: is a symlink.*nothing is written into it/)]);
    expect(readdirSync(target)).toEqual(["SKILL.md"]);
  });
});
