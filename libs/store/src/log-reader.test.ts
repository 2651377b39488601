import { describe, expect, it } from "@jest/globals";
import type { LogEntry } from "@mom/contracts";
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChannelStore } from "./channel-store.js";
import { readLogSince, readLogTail } from "./log-reader.js";

const entry = (id: string, text = `text of ${id}`): LogEntry => ({ id, date: "2026-11-23T08:00:00.000Z", user: "U1", userName: "alice", text, attachments: [], isBot: false });
const line = (e: LogEntry) => `${JSON.stringify(e)}\n`;

function logFile(...ids: string[]): string {
  const file = join(mkdtempSync(join(tmpdir(), "mom-log-")), "log.jsonl");
  writeFileSync(file, ids.map((id) => line(entry(id))).join(""));
  return file;
}

describe("reading log.jsonl from a cursor", () => {
  it("reads only what follows the cursor, and the cursor moves with each read", async () => {
    const file = logFile("a", "b");
    const first = await readLogSince(file, undefined);
    expect(first.entries.map((p) => p.entry.id)).toEqual(["a", "b"]);
    const cursor = { lastId: "b", offset: first.entries[1]!.end };
    expect(cursor.offset).toBe(readFileSync(file).length);
    appendFileSync(file, line(entry("c")) + line(entry("d", "ünïcödé")));
    const next = await readLogSince(file, cursor);
    expect(next).toMatchObject({ rescanned: false });
    expect(next.entries.map((p) => p.entry.id)).toEqual(["c", "d"]);
    expect(next.entries[1]!.end).toBe(readFileSync(file).length); // byte offsets, not characters
  });

  it("never moves past a torn last line, and reads it once it is whole", async () => {
    const file = logFile("a");
    const whole = readFileSync(file).length;
    appendFileSync(file, line(entry("b")).slice(0, 20));
    const read = await readLogSince(file, { lastId: "a", offset: whole });
    expect(read.entries).toEqual([]);
    writeFileSync(file, readFileSync(file, "utf8").slice(0, whole) + line(entry("b")));
    expect((await readLogSince(file, { lastId: "a", offset: whole })).entries.map((p) => p.entry.id)).toEqual(["b"]);
  });

  it("finds its place again after a person truncates, rotates or edits the log", async () => {
    const file = logFile("a", "b", "c");
    const afterC = readFileSync(file).length;
    // Truncated to its first two lines, then written to: "c" is gone, so everything is new.
    writeFileSync(file, line(entry("a")) + line(entry("b")) + line(entry("x")));
    expect(await readLogSince(file, { lastId: "c", offset: afterC })).toMatchObject({ rescanned: true });
    expect((await readLogSince(file, { lastId: "c", offset: afterC })).entries.map((p) => p.entry.id)).toEqual(["a", "b", "x"]);
    // An earlier line edited by hand: the offset no longer ends at "b", so "b" is found by scanning.
    const afterB = (line(entry("a")) + line(entry("b"))).length;
    writeFileSync(file, line(entry("a", "edited to be longer")) + line(entry("b")) + line(entry("y")));
    const edited = await readLogSince(file, { lastId: "b", offset: afterB });
    expect(edited).toMatchObject({ rescanned: true });
    expect(edited.entries.map((p) => p.entry.id)).toEqual(["y"]);
    // Rotated away (a new, empty file): nothing to sync, and no error.
    writeFileSync(file, "");
    expect(await readLogSince(file, { lastId: "y", offset: 10 })).toEqual({ entries: [], rescanned: true, skippedBytes: 0 });
  });

  it("a store opened after a restart continues from the cursor without reading the history", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-chan-"));
    const before = new ChannelStore({ adapter: "cli", channelId: "x" }, dir, join(dir, "MEMORY.md"));
    for (let i = 0; i < 50; i++) await before.appendLog(entry(`m${i}`));
    const read = await before.readLogSince(undefined);
    const cursor = { lastId: "m49", offset: read.entries.at(-1)!.end };
    const after = new ChannelStore({ adapter: "cli", channelId: "x" }, dir, join(dir, "MEMORY.md"));
    // A message read again after the crash is recognised from the log's tail: not logged twice.
    expect(await after.appendLog(entry("m49"))).toBe(false);
    expect(await after.appendLog(entry("m50"))).toBe(true);
    expect(await after.readLogSince(cursor)).toMatchObject({ rescanned: false, entries: [{ entry: { id: "m50" } }] });
  });

  it("reads at most the last maxBytes after a cursor (or of a log never synced), saying how much it left unread", async () => {
    const file = logFile(...Array.from({ length: 2000 }, (_, i) => `n${i}`));
    const size = readFileSync(file).length;
    const never = await readLogSince(file, undefined, 4096);
    expect(never.entries.at(-1)!.entry.id).toBe("n1999");
    expect(never.entries.length).toBeLessThan(100);
    expect(never.skippedBytes).toBe(size - (size - never.entries[0]!.end) - line(never.entries[0]!.entry).length);
    const first = (await readLogSince(file, undefined)).entries[99]!;
    const after = await readLogSince(file, { lastId: "n99", offset: first.end }, 4096);
    expect(after).toMatchObject({ rescanned: false });
    expect(after.entries.at(-1)!.entry.id).toBe("n1999");
    expect(after.skippedBytes).toBe(never.skippedBytes - first.end);
    expect(await readLogSince(file, { lastId: "n1990", offset: 3 }, 4096)).toMatchObject({ rescanned: true, skippedBytes: 0, entries: expect.arrayContaining([expect.objectContaining({ entry: expect.objectContaining({ id: "n1999" }) })]) });
  });

  it("the tail holds the recent entries only", async () => {
    const file = logFile(...Array.from({ length: 3000 }, (_, i) => `t${i}`));
    const tail = await readLogTail(file, 4096);
    expect(tail.length).toBeGreaterThan(10);
    expect(tail.length).toBeLessThan(100);
    expect(tail.at(-1)!.entry.id).toBe("t2999");
  });
});
