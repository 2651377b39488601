import type { LogEntry } from "@mom/contracts";
import { type FileHandle, open } from "node:fs/promises";
import { readRange } from "./beneath.js";
import { logEntryValidator } from "./log-lines.js";

/** A log file: its path, or a function that opens it for reading (undefined when missing; see beneath.ts). */
export type LogFile = string | (() => Promise<FileHandle | undefined>);

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

async function openLog(file: LogFile): Promise<FileHandle | undefined> {
  if (typeof file !== "string") return file();
  return open(file, "r").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw err;
  });
}

/** Runs `fn` on the open log and its size; a missing log is an empty one. */
async function withLog<T>(file: LogFile, fn: (fh: FileHandle | undefined, size: number) => Promise<T>): Promise<T> {
  const fh = await openLog(file);
  try {
    return await fn(fh, fh ? (await fh.stat()).size : 0);
  } finally {
    await fh?.close();
  }
}

export function fileSize(file: LogFile): Promise<number> {
  return withLog(file, async (_, size) => size);
}

function rangeOf(fh: FileHandle | undefined, start: number, end: number): Promise<Buffer> {
  return fh ? readRange(fh, start, end) : Promise.resolve(Buffer.alloc(0));
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
async function cursorHolds(fh: FileHandle | undefined, cursor: LogCursor, size: number): Promise<boolean> {
  if (cursor.offset === undefined || cursor.offset <= 0 || cursor.offset > size) return false;
  const from = Math.max(0, cursor.offset - 65_536);
  const buf = await rangeOf(fh, from, cursor.offset);
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
export function readLogSince(
  file: LogFile,
  cursor: LogCursor | undefined,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<{ entries: PlacedEntry[]; rescanned: boolean; skippedBytes: number }> {
  return withLog(file, async (fh, size) => {
    if (cursor?.offset !== undefined && (await cursorHolds(fh, cursor, size))) {
      const { entries, base } = await readWindow(fh, cursor.offset, size, maxBytes);
      return { entries, rescanned: false, skippedBytes: base - cursor.offset };
    }
    const { entries: all, base } = await readWindow(fh, 0, size, maxBytes);
    const at = cursor ? all.findIndex((p) => p.entry.id === cursor.lastId) : -1;
    return { entries: all.slice(at + 1), rescanned: cursor !== undefined, skippedBytes: at === -1 ? base : 0 };
  });
}

/** The entries between `start` and `end`, of at most the last `maxBytes` (a partial first line dropped); `base` is where reading began. */
async function readWindow(fh: FileHandle | undefined, start: number, end: number, maxBytes: number): Promise<{ entries: PlacedEntry[]; base: number }> {
  const from = Math.max(start, end - maxBytes);
  let buf = await rangeOf(fh, from, end);
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
export function readLogTail(file: LogFile, bytes = LOG_TAIL_BYTES): Promise<PlacedEntry[]> {
  return withLog(file, async (fh, size) => {
    const from = Math.max(0, size - bytes);
    let buf = await rangeOf(fh, from, size);
    let base = from;
    if (from > 0) {
      const nl = buf.indexOf(0x0a);
      if (nl === -1) return [];
      buf = buf.subarray(nl + 1);
      base += nl + 1;
    }
    return placed(buf, base);
  });
}
