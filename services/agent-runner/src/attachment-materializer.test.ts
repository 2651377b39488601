import { describe, expect, it } from "@jest/globals";
import type { FileInfo, FileSource } from "@mom/bus";
import { FileTooLargeError } from "@mom/bus";
import type { Attachment, ChannelMessage, LogEntry } from "@mom/contracts";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { channelMaterializer, materializeAttachments, type MaterializeDeps } from "./attachment-materializer.js";

const TS = "2026-11-21T10:00:00.000Z";
const STAMP = Date.parse(TS);

/** An in-memory files bucket that counts reads. */
class FakeFiles implements FileSource {
  readonly objects = new Map<string, { bytes: Uint8Array; mimeType?: string }>();
  reads = 0;
  failWith?: Error;
  delayMs = 0;
  put(name: string, content: string | Uint8Array, mimeType?: string): string {
    this.objects.set(name, { bytes: typeof content === "string" ? Buffer.from(content) : content, mimeType });
    return name;
  }
  async fileInfo(name: string): Promise<FileInfo | undefined> {
    if (this.failWith) throw this.failWith;
    const o = this.objects.get(name);
    return o && { name, size: o.bytes.length, ...(o.mimeType && { mimeType: o.mimeType }) };
  }
  async getFile(name: string, opts: { maxBytes?: number } = {}): Promise<Uint8Array | undefined> {
    this.reads++;
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    const o = this.objects.get(name);
    if (o && opts.maxBytes !== undefined && o.bytes.length > opts.maxBytes) throw new FileTooLargeError(name, o.bytes.length, opts.maxBytes);
    return o?.bytes;
  }
}

function setup(maxBytes = 1024) {
  const workspaceDir = mkdtempSync(join(tmpdir(), "mom-mat-"));
  const channelDir = join(workspaceDir, "channels", "cli", "local");
  const attachmentsDir = join(channelDir, "attachments");
  const log: LogEntry[] = [];
  const files = new FakeFiles();
  const deps: MaterializeDeps = {
    files,
    store: { ref: { adapter: "cli", channelId: "local" }, dir: channelDir, findLogEntry: async (id: string) => log.find((e) => e.id === id) },
    workspaceDir,
    maxBytes,
    log: pino({ level: "silent" }),
  };
  return { workspaceDir, channelDir, attachmentsDir, files, deps, log };
}

function message(attachments: Attachment[], id = "m1"): ChannelMessage {
  return { id, channelId: "local", timestamp: TS, sender: { id: "u1", username: "alice", isBot: false }, text: "see attached", attachments, isMention: true };
}

const incoming = (filename: string, objectKey: string, extra: Partial<Attachment> = {}): Attachment => ({ filename, localPath: "", objectKey, ...extra });

describe("materializeAttachments", () => {
  it("writes the bytes under attachments/ as <timestamp>-<name> and records a workspace-relative localPath", async () => {
    const t = setup();
    t.files.put("cli/local/u/k1", "%PDF-1.4 hello", "application/pdf");
    const out = await materializeAttachments(message([incoming("report.pdf", "cli/local/u/k1")]), t.deps);
    const a = out.attachments[0]!;
    expect(a).toEqual({ filename: "report.pdf", localPath: `channels/cli/local/attachments/${STAMP}-report.pdf`, objectKey: "cli/local/u/k1", size: 14, mimeType: "application/pdf" });
    expect(readFileSync(join(t.workspaceDir, a.localPath), "utf8")).toBe("%PDF-1.4 hello");
  });

  it("never writes through an attachments/ the agent replaced with a symlink: the file gets a note the model reads", async () => {
    const t = setup();
    const target = join(t.workspaceDir, "channels", "cli", "other", "skills");
    mkdirSync(target, { recursive: true });
    mkdirSync(t.channelDir, { recursive: true });
    symlinkSync(target, t.attachmentsDir);
    t.files.put("cli/local/u/k1", "---\nname: evil\n---\n", "text/markdown");
    const out = await materializeAttachments(message([incoming("SKILL.md", "cli/local/u/k1")]), t.deps);
    expect(out.attachments[0]).toMatchObject({ localPath: "", note: expect.stringMatching(/^could not be saved: attachments: is a symlink/) });
    expect(readdirSync(target)).toEqual([]);
  });

  it("writes nothing into a channel this runner was fenced off, and lets the refusal through", async () => {
    const t = setup();
    t.files.put("cli/local/u/k1", "hello", "text/plain");
    const deps = { ...t.deps, store: { ...t.deps.store, writeGuard: () => { throw new Error("channel cli.local now belongs to another runner"); } } };
    await expect(materializeAttachments(message([incoming("a.txt", "cli/local/u/k1")]), deps)).rejects.toThrow(/another runner/);
    expect(existsSync(t.attachmentsDir) ? readdirSync(t.attachmentsDir) : []).toEqual([]);
  });

  it("sanitises names: no traversal, no directories, something usable when nothing is left", async () => {
    const t = setup();
    for (const k of ["cli/local/u/k1", "cli/local/u/k2", "cli/local/u/k3", "cli/local/u/k4"]) t.files.put(k, k);
    const out = await materializeAttachments(
      message([incoming("../../etc/passwd", "cli/local/u/k1"), incoming("a/b/c.txt", "cli/local/u/k2"), incoming("..", "cli/local/u/k3"), incoming("$(reboot).sh", "cli/local/u/k4")]),
      t.deps,
    );
    expect(out.attachments.map((a) => a.localPath)).toEqual([
      `channels/cli/local/attachments/${STAMP}-passwd`,
      `channels/cli/local/attachments/${STAMP}-c.txt`,
      `channels/cli/local/attachments/${STAMP}-file`,
      `channels/cli/local/attachments/${STAMP}-_reboot_.sh`,
    ]);
    expect(readdirSync(t.attachmentsDir).sort()).toEqual([`${STAMP}-_reboot_.sh`, `${STAMP}-c.txt`, `${STAMP}-file`, `${STAMP}-passwd`]);
    expect(existsSync(join(t.workspaceDir, "etc"))).toBe(false);
  });

  it("never overwrites: the same name twice (or an existing file) gets -2, -3", async () => {
    const t = setup();
    t.files.put("cli/local/u/k1", "first");
    t.files.put("cli/local/u/k2", "second");
    t.files.put("cli/local/u/k3", "third");
    const one = await materializeAttachments(message([incoming("x.txt", "cli/local/u/k1"), incoming("x.txt", "cli/local/u/k2")]), t.deps);
    const two = await materializeAttachments(message([incoming("x.txt", "cli/local/u/k3")], "m2"), t.deps);
    const paths = [...one.attachments, ...two.attachments].map((a) => a.localPath.split("/").at(-1));
    expect(paths).toEqual([`${STAMP}-x.txt`, `${STAMP}-x-2.txt`, `${STAMP}-x-3.txt`]);
    expect(readFileSync(join(t.attachmentsDir, `${STAMP}-x.txt`), "utf8")).toBe("first");
    expect(readFileSync(join(t.attachmentsDir, `${STAMP}-x-3.txt`), "utf8")).toBe("third");
  });

  it("does not fetch a file that is too large (declared, stored or read) and says so in a note", async () => {
    const t = setup(1024);
    t.files.put("cli/local/u/big", new Uint8Array(4096));
    const declared = await materializeAttachments(message([incoming("huge.zip", "cli/local/u/big", { size: 31 * 1024 * 1024 })]), t.deps);
    expect(declared.attachments[0]).toMatchObject({ localPath: "", note: "too large: 31 MB > 1 KB limit" });
    expect(t.files.reads).toBe(0);
    const stored = await materializeAttachments(message([incoming("huge.zip", "cli/local/u/big")], "m2"), t.deps);
    expect(stored.attachments[0]).toMatchObject({ localPath: "", note: "too large: 4 KB > 1 KB limit" });
    expect(t.files.reads).toBe(0);
    expect(existsSync(t.attachmentsDir) ? readdirSync(t.attachmentsDir) : []).toEqual([]);
  });

  it("notes a file missing from the object store or failing to fetch, and keeps the others", async () => {
    const t = setup();
    t.files.put("cli/local/u/ok", "fine");
    const out = await materializeAttachments(message([incoming("gone.txt", "cli/local/u/nope"), incoming("fine.txt", "cli/local/u/ok")]), t.deps);
    expect(out.attachments[0]).toMatchObject({ filename: "gone.txt", localPath: "", note: "not found in the object store" });
    expect(out.attachments[1]!.localPath).toBe(`channels/cli/local/attachments/${STAMP}-fine.txt`);

    t.files.failWith = new Error("NATS is down");
    const failed = await materializeAttachments(message([incoming("fine.txt", "cli/local/u/ok")], "m2"), t.deps);
    expect(failed.attachments[0]).toMatchObject({ localPath: "", note: "could not be fetched: NATS is down" });
  });

  it("ignores a localPath that came over the bus (only the runner says where files are)", async () => {
    const t = setup();
    const out = await materializeAttachments(message([{ filename: "passwd", localPath: "../../../../etc/passwd" }]), t.deps);
    expect(out.attachments[0]).toEqual({ filename: "passwd", localPath: "" });
  });

  it("reuses what was logged for a redelivered message instead of writing the files again", async () => {
    const t = setup();
    t.files.put("cli/local/u/k1", "data");
    const first = await materializeAttachments(message([incoming("a.txt", "cli/local/u/k1")]), t.deps);
    t.log.push({ id: "m1", date: TS, user: "u1", userName: "alice", text: "see attached", attachments: first.attachments, isBot: false });
    const again = await materializeAttachments(message([incoming("a.txt", "cli/local/u/k1")]), t.deps);
    expect(again.attachments).toEqual(first.attachments);
    expect(readdirSync(t.attachmentsDir)).toEqual([`${STAMP}-a.txt`]);
  });

  it("leaves messages without stored attachments untouched", async () => {
    const t = setup();
    const m = message([]);
    expect(await materializeAttachments(m, t.deps)).toBe(m);
  });
});

describe("materializeAttachments: another channel's objects", () => {
  it("refuses an objectKey that belongs to another channel (or to no channel), and reads nothing", async () => {
    const t = setup();
    t.files.put("cli/other/u/secret.txt", "another channel's file");
    t.files.put("cli/local-2/u/x.txt", "a channel whose id starts like ours");
    t.files.put("k9", "no channel at all");
    t.files.put("cli/local/u/mine.txt", "ours");
    const out = await materializeAttachments(
      message([incoming("secret.txt", "cli/other/u/secret.txt"), incoming("x.txt", "cli/local-2/u/x.txt"), incoming("k9.txt", "k9"), incoming("mine.txt", "cli/local/u/mine.txt")]),
      t.deps,
    );
    expect(out.attachments.slice(0, 3).map((a) => [a.localPath, a.note])).toEqual([
      ["", "refused: the file belongs to another channel"],
      ["", "refused: the file belongs to another channel"],
      ["", "refused: the file belongs to another channel"],
    ]);
    expect(out.attachments[3]!.localPath).toBe(`channels/cli/local/attachments/${STAMP}-mine.txt`);
    expect(t.files.reads).toBe(1);
    expect(readdirSync(t.attachmentsDir)).toEqual([`${STAMP}-mine.txt`]);
  });
});

describe("channelMaterializer", () => {
  it("resolves in call order, so a slow download does not let a later message be logged first", async () => {
    const t = setup();
    t.files.put("cli/local/u/k1", "slow");
    t.files.delayMs = 150;
    const materialize = channelMaterializer(t.deps);
    const order: string[] = [];
    await Promise.all([
      materialize(message([incoming("a.txt", "cli/local/u/k1")], "m1")).then((m) => order.push(m.id)),
      materialize(message([], "m2")).then((m) => order.push(m.id)),
    ]);
    expect(order).toEqual(["m1", "m2"]);
  });
});
