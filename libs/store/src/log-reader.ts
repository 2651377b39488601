import type { LogEntry } from "@mom/contracts";
import { open, stat } from "node:fs/promises";
import { logEntryValidator } from "./log-lines.js";

/** Where a reader of log.jsonl stopped: just after the line of `lastId`, `offset` bytes in. */
export interface LogCursor {
  /** Absent (a marker older than cursors): lastId is found by reading the log once. */
  offset?: number;
  lastId: string;
}

export interface PlacedEntry {
  entry: LogEntry;
  /** Byte offset just after this entry's line: a cursor for "everything after it". */
  end: number;
}

/** How far back the tail of a log is read (recent ids, recent people). */
export const LOG_TAIL_BYTES = 1 << 20;

export async function fileSize(file: string): Promise<number> {
  const st = await stat(file).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw err;
  });
  return st?.size ?? 0;
}

async function readRange(file: string, start: number, end: number): Promise<Buffer> {
  if (end <= start) return Buffer.alloc(0);
  const handle = await open(file, "r");
  try {
    const buf = Buffer.alloc(end - start);
    let got = 0;
    while (got < buf.length) {
      const { bytesRead } = await handle.read(buf, got, buf.length - got, start + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return buf.subarray(0, got);
  } finally {
    await handle.close();
  }
}

/**
 * The complete lines of `buf` (which starts at file offset `base`) as entries with their end
 * offsets. A line without its newline (torn by a crash, or still being written) is left out, so a
 * cursor never moves past it; lines that are not log entries are skipped.
 */
function placed(buf: Buffer, base: number): PlacedEntry[] {
  const out: PlacedEntry[] = [];
  let start = 0;
  for (;;) {
    const nl = buf.indexOf(0x0a, start);
    if (nl === -1) break;
    const raw = buf.toString("utf8", start, nl);
    start = nl + 1;
    if (raw.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      continue;
    }
    const check = logEntryValidator.check(value);
    if (check.ok) out.push({ entry: check.value, end: base + start });
  }
  return out;
}

/** True when the line that ends exactly at `offset` is the entry `lastId` (the cursor still fits the file). */
async function cursorHolds(file: string, cursor: LogCursor, size: number): Promise<boolean> {
  if (cursor.offset === undefined || cursor.offset <= 0 || cursor.offset > size) return false;
  const from = Math.max(0, cursor.offset - 65_536);
  const buf = await readRange(file, from, cursor.offset);
  if (buf.at(-1) !== 0x0a) return false;
  const prev = buf.lastIndexOf(0x0a, buf.length - 2);
  if (prev === -1 && from > 0) return false; // a line longer than the window: check the slow way
  try {
    return (JSON.parse(buf.toString("utf8", prev + 1, buf.length - 1)) as { id?: unknown }).id === cursor.lastId;
  } catch {
    return false;
  }
}

/**
 * The entries after a cursor, reading only the bytes after it, and of those at most the last
 * `maxBytes` (a history never synced, or synced long ago, can be hundreds of MB: reading it whole
 * would block the event loop and fill the heap). `skippedBytes` counts the bytes after the
 * cursor left unread. When the cursor no longer fits (someone truncated, rotated or edited the
 * log), `lastId` is looked for in the last `maxBytes` of the file and the entries after it are
 * returned — the whole window when it is not there.
 */
export async function readLogSince(
  file: string,
  cursor: LogCursor | undefined,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<{ entries: PlacedEntry[]; rescanned: boolean; skippedBytes: number }> {
  const size = await fileSize(file);
  if (cursor?.offset !== undefined && (await cursorHolds(file, cursor, size))) {
    const { entries, base } = await readWindow(file, cursor.offset, size, maxBytes);
    return { entries, rescanned: false, skippedBytes: base - cursor.offset };
  }
  const { entries: all, base } = await readWindow(file, 0, size, maxBytes);
  const at = cursor ? all.findIndex((p) => p.entry.id === cursor.lastId) : -1;
  return { entries: all.slice(at + 1), rescanned: cursor !== undefined, skippedBytes: at === -1 ? base : 0 };
}

/** The entries between `start` and `end`, of at most the last `maxBytes` (a partial first line dropped); `base` is where reading began. */
async function readWindow(file: string, start: number, end: number, maxBytes: number): Promise<{ entries: PlacedEntry[]; base: number }> {
  const from = Math.max(start, end - maxBytes);
  let buf = await readRange(file, from, end);
  let base = from;
  if (from > start) {
    const nl = buf.indexOf(0x0a);
    if (nl === -1) return { entries: [], base: end };
    buf = buf.subarray(nl + 1);
    base += nl + 1;
  }
  return { entries: placed(buf, base), base };
}

/** The entries in the last `bytes` of the log (the first, partial line dropped). */
export async function readLogTail(file: string, bytes = LOG_TAIL_BYTES): Promise<PlacedEntry[]> {
  const size = await fileSize(file);
  const from = Math.max(0, size - bytes);
  let buf = await readRange(file, from, size);
  let base = from;
  if (from > 0) {
    const nl = buf.indexOf(0x0a);
    if (nl === -1) return [];
    buf = buf.subarray(nl + 1);
    base += nl + 1;
  }
  return placed(buf, base);
}
