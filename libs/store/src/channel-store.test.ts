import { afterEach, beforeEach, describe, expect, it } from "@jest/globals";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LogEntry } from "@mom/contracts";
import { ChannelStore, WorkspaceLayout } from "./index.js";

let root: string;
let layout: WorkspaceLayout;
let store: ChannelStore;
const ref = { adapter: "cli", channelId: "local" };
beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), "mom-store-"));
  layout = new WorkspaceLayout(join(root, "workspace"));
  await layout.ensureWorkspace();
  store = layout.channel(ref);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function entry(id: string, extra: Partial<LogEntry> = {}): LogEntry {
  return { id, date: "2025-01-02T03:04:05.000Z", user: "U1", userName: "mario", text: `text of ${id}`, attachments: [], isBot: false, ...extra };
}

/** A second store on the same directory, as after a process restart. */
const reopened = () => new WorkspaceLayout(layout.workspaceDir).channel(ref);

describe("ChannelStore log", () => {
  it("round-trips entries as one JSON line each", async () => {
    const full = entry("m2", {
      displayName: "Mario",
      isMention: true,
      replyTo: "m1",
      runId: "r1",
      attachments: [{ filename: "a.png", localPath: "attachments/a.png", mimeType: "image/png", size: 3 }],
      metadata: { thread: "t1" },
    });
    expect(await store.appendLog(entry("m1"))).toBe(true);
    expect(await store.appendLog(full)).toBe(true);
    expect(readFileSync(store.logFile, "utf8")).toBe(`${JSON.stringify(entry("m1"))}\n${JSON.stringify(full)}\n`);
    expect(await store.readLog()).toEqual({ entries: [entry("m1"), full], skipped: [] });
  });

  it("writes nothing to the log or the receipts once its write guard refuses (a runner fenced off the channel)", async () => {
    await store.appendLog(entry("m1"));
    let fenced = false;
    store.writeGuard = () => {
      if (fenced) throw new Error("channel cli.local now belongs to another runner");
    };
    fenced = true;
    await expect(store.appendLog(entry("m2"))).rejects.toThrow(/another runner/);
    const receipt = { receiptId: "x", type: "tool.call.started", runId: "r1", toolCallId: "t1", toolId: "bash", risk: "write", ts: "2025-01-02T03:04:05.000Z", argsHash: "0" } as const;
    await expect(store.appendReceipt(receipt)).rejects.toThrow(/another runner/);
    expect(readFileSync(store.logFile, "utf8")).toBe(`${JSON.stringify(entry("m1"))}\n`);
    expect(existsSync(store.receiptsFile)).toBe(false);
    await expect(store.appendJobRecord({ type: "ended", id: "job-1", endedAt: "2025-01-02T03:04:05.000Z" })).rejects.toThrow(/another runner/);
    await expect(store.compactJobRecords()).rejects.toThrow(/another runner/);
    expect(existsSync(store.jobsFile)).toBe(false);
    fenced = false;
    expect(await store.appendLog(entry("m2"))).toBe(true);
  });

  it("finds mom's answer to a message in the log's tail, and nothing for an unanswered one", async () => {
    await store.appendLog(entry("q1"));
    await store.appendLog(entry("q2"));
    await store.appendLog(entry("r1:reply", { user: "mom", userName: "mom", isBot: true, runId: "r1", metadata: { triggerId: "q1" } }));
    expect(await store.findReplyTo("q1")).toMatchObject({ id: "r1:reply", runId: "r1" });
    expect(await store.findReplyTo("q2")).toBeUndefined();
  });

  it("reads an absent log as empty", async () => {
    expect(await store.readLog()).toEqual({ entries: [], skipped: [] });
  });

  it("pages with afterId and limit", async () => {
    for (const id of ["a", "b", "c", "d"]) await store.appendLog(entry(id));
    const ids = async (opts: Parameters<ChannelStore["readLog"]>[0]) => (await store.readLog(opts)).entries.map((e) => e.id);
    expect(await ids({ afterId: "b" })).toEqual(["c", "d"]);
    expect(await ids({ afterId: "a", limit: 2 })).toEqual(["b", "c"]);
    expect(await ids({ limit: 1 })).toEqual(["a"]);
    expect(await ids({ afterId: "d" })).toEqual([]);
    expect(await store.readLog({ afterId: "gone", limit: 1 })).toMatchObject({ entries: [entry("a")], afterIdFound: false });
  });

  it("rejects entries that break the contract, writing nothing", async () => {
    await expect(store.appendLog({ ...entry("m1"), date: "yesterday" })).rejects.toThrow("invalid log entry for cli/local: /date");
    await expect(store.appendLog({ ...entry("m1"), extra: 1 } as LogEntry)).rejects.toThrow("invalid log entry");
    expect(await store.readLog()).toEqual({ entries: [], skipped: [] });
    expect(await store.appendLog(entry("m1"))).toBe(true);
  });

  it("is idempotent by id, also across a new store on the same dir", async () => {
    expect(await store.appendLog(entry("m1"))).toBe(true);
    expect(await store.appendLog(entry("m1", { text: "redelivered" }))).toBe(false);
    const again = reopened();
    expect(again).not.toBe(store);
    expect(await again.appendLog(entry("m1"))).toBe(false);
    expect(await again.appendLog(entry("m2"))).toBe(true);
    expect((await store.readLog()).entries.map((e) => e.text)).toEqual(["text of m1", "text of m2"]);
  });

  it("says when an entry is new before writing it, and never for a duplicate", async () => {
    const seen: string[] = [];
    const lines = () => (existsSync(store.logFile) ? readFileSync(store.logFile, "utf8").split("\n").length - 1 : 0);
    const onNew = (id: string) => () => seen.push(`${id} new, log has ${lines()} line(s)`);
    await store.appendLog(entry("m1"), onNew("m1"));
    await store.appendLog(entry("m1"), onNew("m1 again"));
    await store.appendLog(entry("m2"), onNew("m2"));
    expect(seen).toEqual(["m1 new, log has 0 line(s)", "m2 new, log has 1 line(s)"]);
  });

  it("sees what another process appended while it held the channel no more (a runner taking a channel back)", async () => {
    expect(await store.appendLog(entry("m1"))).toBe(true);
    const other = reopened(); // the runner that owned the channel meanwhile
    expect(await other.appendLog(entry("m2"))).toBe(true);
    expect(await other.appendLog(entry("r2", { isBot: true, metadata: { triggerId: "m2" } }))).toBe(true);
    // Back here: m2 read again from the stream is no new message, and its answer is found.
    expect(await store.appendLog(entry("m2"))).toBe(false);
    expect((await store.findLogEntry("r2"))?.metadata).toEqual({ triggerId: "m2" });
    expect((await store.readLog()).entries.map((e) => e.id)).toEqual(["m1", "m2", "r2"]);
    // A person emptied the log: what it held is not remembered as logged.
    writeFileSync(store.logFile, "");
    expect(await store.appendLog(entry("m1"))).toBe(true);
  });

  it("names who has been talking, mom aside, from the log's tail and from what it appends", async () => {
    await store.appendLog(entry("m1", { user: "U1", userName: "ann" }));
    await store.appendLog(entry("r1", { user: "mom", userName: "mom", isBot: true }));
    const again = reopened();
    expect(await again.recentSenders()).toEqual([{ user: "U1", userName: "ann" }]);
    await again.appendLog(entry("m2", { user: "U2", userName: "bob", displayName: "Bob B." }));
    await again.appendLog(entry("m3", { user: "U1", userName: "ann2" }));
    expect(await again.recentSenders()).toEqual([
      { user: "U1", userName: "ann2" },
      { user: "U2", userName: "bob", displayName: "Bob B." },
    ]);
  });

  it("puts a line of its own after a fragment another process left behind its last line", async () => {
    await store.appendLog(entry("m1"));
    appendFileSync(store.logFile, "{\"id\":\"half");
    await store.appendLog(entry("m2"));
    await store.appendLog(entry("m3"));
    expect(readFileSync(store.logFile, "utf8").split("\n")).toEqual([JSON.stringify(entry("m1")), "{\"id\":\"half", JSON.stringify(entry("m2")), JSON.stringify(entry("m3")), ""]);
  });

  it("survives a torn last line: earlier lines intact, tear reported, next append readable", async () => {
    await store.appendLog(entry("m1"));
    await store.appendLog(entry("m2"));
    const torn = JSON.stringify(entry("m3")).slice(0, 25);
    appendFileSync(store.logFile, torn);

    const afterCrash = reopened();
    const read = await afterCrash.readLog();
    expect(read.entries.map((e) => e.id)).toEqual(["m1", "m2"]);
    expect(read.skipped).toEqual([{ line: 3, reason: "torn last line (no trailing newline)" }]);

    // The torn m3 never counted as logged, so its redelivery is written whole.
    expect(await afterCrash.appendLog(entry("m3"))).toBe(true);
    expect(readFileSync(afterCrash.logFile, "utf8").split("\n")).toEqual([
      JSON.stringify(entry("m1")),
      JSON.stringify(entry("m2")),
      torn,
      JSON.stringify(entry("m3")),
      "",
    ]);
    const healed = await afterCrash.readLog();
    expect(healed.entries.map((e) => e.id)).toEqual(["m1", "m2", "m3"]);
    expect(healed.skipped).toEqual([{ line: 3, reason: expect.stringMatching(/^invalid JSON/) }]);
  });

  it("skips and reports invalid lines anywhere", async () => {
    mkdirSync(store.dir, { recursive: true });
    writeFileSync(store.logFile, [JSON.stringify(entry("m1")), "not json", JSON.stringify({ id: "x" }), "", JSON.stringify(entry("m2")), ""].join("\n"));
    const { entries, skipped } = await store.readLog();
    expect(entries.map((e) => e.id)).toEqual(["m1", "m2"]);
    expect(skipped.map((s) => s.line)).toEqual([2, 3]);
    expect(skipped[0]!.reason).toMatch(/^invalid JSON/);
    expect(skipped[1]!.reason).toMatch(/^not a LogEntry: /);
  });

  it("keeps 200 concurrent appends whole and in order", async () => {
    const ids = Array.from({ length: 200 }, (_, i) => `m${i}`);
    const text = "x".repeat(2000);
    const results = await Promise.all([...ids, ...ids.slice(0, 50)].map((id) => store.appendLog(entry(id, { text }))));
    expect(results.filter(Boolean)).toHaveLength(200);
    const lines = readFileSync(store.logFile, "utf8").split("\n");
    expect(lines).toHaveLength(201);
    const { entries, skipped } = await store.readLog();
    expect(skipped).toEqual([]);
    expect(entries.map((e) => e.id)).toEqual(ids);
    expect(entries.every((e) => e.text === text)).toBe(true);
  });

  it("keeps appending after a failed append", async () => {
    const failing = new ChannelStore(ref, join(root, "file-in-the-way", "chan"), layout.memoryFile);
    writeFileSync(join(root, "file-in-the-way"), "");
    await expect(failing.appendLog(entry("m1"))).rejects.toThrow();
    rmSync(join(root, "file-in-the-way"));
    expect(await failing.appendLog(entry("m1"))).toBe(true);
  });
});

describe("ChannelStore memory", () => {
  it("reads missing memory as empty strings", async () => {
    expect(await store.readMemory()).toEqual({ global: "", channel: "" });
  });

  it("reads global and channel MEMORY.md", async () => {
    writeFileSync(layout.memoryFile, "# Global\nbe kind\n");
    await store.ensureDirs();
    writeFileSync(store.memoryFile, "# Channel\nrepo is mom\n");
    expect(await store.readMemory()).toEqual({ global: "# Global\nbe kind\n", channel: "# Channel\nrepo is mom\n" });
  });
});
