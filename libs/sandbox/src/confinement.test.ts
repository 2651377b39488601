import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { chmodSync, chownSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bwrapAvailable } from "./bwrap-executor.js";
import { stoppedNote } from "./executor.js";
import { DEFAULT_SANDBOX_UID, Sandbox, type ChannelSandbox } from "./sandbox.js";
import { makeDataDir, run } from "./test-support.js";

if (!bwrapAvailable()) throw new Error("bubblewrap (bwrap) is missing or cannot create namespaces here: `npm test` installs it");

const MB = 1024 * 1024;
const root = process.getuid?.() === 0;
const tag = `${process.pid}-${Date.now()}`;
// A root-owned secret of the host, and a file of another user that only its group may read.
const CANARY = `/etc/mom-canary-${tag}`;
const OTHERS = `/etc/mom-others-${tag}`;

// What a root runner's channel may do through bash and through the file tools: the same.
(root ? describe : describe.skip)("a root runner's commands and file tools run as the sandbox's uid", () => {
  const dirs = makeDataDir();
  let ch: ChannelSandbox;
  beforeAll(() => {
    writeFileSync(CANARY, "host secret\n", { mode: 0o600 });
    writeFileSync(OTHERS, "someone's notes\n", { mode: 0o640 });
    chownSync(OTHERS, 4242, 4242);
    // As a data dir made by an earlier root runner: everything root's, a subdirectory included.
    mkdirSync(join(dirs.channelA, "attachments"));
    writeFileSync(join(dirs.channelA, "attachments", "old.txt"), "from before\n");
    writeFileSync(join(dirs.channelA, "log.jsonl"), "");
    ch = new Sandbox({ type: "bwrap", memoryMb: 128, tmpMb: 16, maxFileMb: 20, diskMb: 60 }, dirs).forChannel(dirs.channelA, [join(dirs.channelA, "log.jsonl")]);
  });
  afterAll(() => {
    rmSync(CANARY, { force: true });
    rmSync(OTHERS, { force: true });
    rmSync(dirs.dataDir, { recursive: true, force: true });
  });

  it("bash is the sandbox's uid, not root", async () => {
    const r = await run(ch.executor, "id -u; id -g; id -G");
    expect(r.output.trim().split("\n")).toEqual([String(DEFAULT_SANDBOX_UID), String(DEFAULT_SANDBOX_UID), String(DEFAULT_SANDBOX_UID)]);
  });

  it("neither bash nor the read tool reads a root-owned mode-600 file or another user's mode-640 file", async () => {
    const r = await run(ch.executor, `cat ${CANARY} ${OTHERS}; ls /etc/ssl/private 2>&1 | head -1`);
    expect(r.output).not.toContain("host secret");
    expect(r.output).not.toContain("someone's notes");
    expect(r.output).toContain("Permission denied");
    await expect(ch.files.readFile(CANARY)).rejects.toThrow(/permission denied/);
    await expect(ch.files.readFile(OTHERS)).rejects.toThrow(/permission denied/);
    await expect(ch.files.readHead(CANARY, 4)).rejects.toThrow(/permission denied/);
    await expect(ch.files.access(CANARY, "read")).rejects.toThrow(/permission denied/);
    // What bash can read, the tool can: a world-readable system file.
    expect((await ch.files.readFile("/etc/hostname")).length).toBeGreaterThan(0);
  });

  it("a file in a directory closed to the uid is unreachable for both", async () => {
    const closed = `/etc/mom-closed-${tag}`;
    mkdirSync(closed, { mode: 0o700 });
    writeFileSync(join(closed, "key"), "private key\n", { mode: 0o644 });
    try {
      expect((await run(ch.executor, `cat ${closed}/key`)).output).toContain("Permission denied");
      await expect(ch.files.readFile(join(closed, "key"))).rejects.toThrow(/permission denied/);
    } finally {
      rmSync(closed, { recursive: true, force: true });
    }
  });

  it("the channel's directory, a root runner's old files included, is the uid's; what the write tool makes bash can change", async () => {
    expect(statSync(dirs.channelA).uid).toBe(DEFAULT_SANDBOX_UID);
    expect(statSync(join(dirs.channelA, "attachments")).uid).toBe(DEFAULT_SANDBOX_UID);
    expect(statSync(join(dirs.channelA, "log.jsonl")).uid).toBe(0); // the runner's own file stays the runner's
    await ch.files.mkdir("notes/deep");
    await ch.files.writeFile("notes/deep/todo.md", "one\n");
    expect(statSync(join(dirs.channelA, "notes", "deep", "todo.md")).uid).toBe(DEFAULT_SANDBOX_UID);
    expect(statSync(join(dirs.channelA, "notes")).uid).toBe(DEFAULT_SANDBOX_UID);
    const r = await run(ch.executor, "echo two >> notes/deep/todo.md && cat notes/deep/todo.md && echo new > attachments/new.txt && rm attachments/old.txt && echo ok");
    expect(r.output).toBe("one\ntwo\nok\n");
    // A file bash cannot change (one the root runner wrote later, like an attachment), the
    // edit/write tools cannot either; bash may still delete it, as the directory is the channel's.
    writeFileSync(join(dirs.channelA, "attachments", "upload.txt"), "root's\n");
    chmodSync(join(dirs.channelA, "attachments", "upload.txt"), 0o644);
    await expect(ch.files.writeFile("attachments/upload.txt", "changed")).rejects.toThrow(/permission denied/);
    await expect(ch.files.access("attachments/upload.txt", "write")).rejects.toThrow(/permission denied/);
    expect((await run(ch.executor, "echo x >> attachments/upload.txt")).output).toContain("Permission denied");
    expect((await ch.files.readFile("attachments/upload.txt")).toString()).toBe("root's\n");
    // A directory the runner makes later is handed over before the next command.
    mkdirSync(join(dirs.channelA, "scratch"));
    expect((await run(ch.executor, "echo s > scratch/s.txt && rm attachments/upload.txt && echo ok2")).output).toBe("ok2\n");
  });

  it("a command touching more memory than its limit is killed, with a line saying so", async () => {
    const r = await run(ch.executor, "x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo survived ${#x}");
    expect(r.output).not.toContain("survived 400000000");
    expect(r.hit).toBe("memory");
    expect(stoppedNote(r, MB, 1000, ch.executor.limits)).toMatch(/more than 128 MB of memory/);
  });

  it("/tmp is a sized tmpfs: filling it past its size fails", async () => {
    const r = await run(ch.executor, "head -c 40000000 /dev/zero > /tmp/big; echo rc=$?; df -k /tmp | tail -1");
    expect(r.output).toContain("No space left on device");
    expect(r.output).toMatch(/tmpfs\s+16384\s/);
    expect((await run(ch.executor, "head -c 40000000 /dev/zero > /dev/shm/big")).output).toContain("No space left on device");
  });

  it("fallocate is refused, a file past the size limit is stopped, and a channel filling its directory is stopped", async () => {
    const fa = await run(ch.executor, "fallocate -l 5G huge; echo rc=$?; ls -s huge 2>&1");
    expect(fa.output).toMatch(/fallocate failed: (Operation not supported|File too large)/);
    const big = await run(ch.executor, "head -c 30000000 /dev/zero > big.bin; echo rc=$?");
    expect(big.hit).toBe("file-size");
    expect(statSync(join(dirs.channelA, "big.bin")).size).toBeLessThanOrEqual(20 * MB);
    const started = Date.now();
    const fill = await run(ch.executor, "for i in $(seq 1 100); do head -c 10000000 /dev/zero > fill-$i.bin || exit 9; sleep 0.05; done; echo filled");
    expect(fill.stopped).toBe("disk");
    expect(fill.output).not.toContain("filled");
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(stoppedNote(fill, MB, 1000, ch.executor.limits)).toMatch(/over its disk limit of 60 MB/);
    // Deleting is never stopped, whatever the directory holds.
    const rm = await run(ch.executor, "rm -f fill-*.bin big.bin; echo cleaned");
    expect(rm.output).toBe("cleaned\n");
    expect(readdirSync(dirs.channelA).filter((n) => n.startsWith("fill-"))).toEqual([]);
  });
});
