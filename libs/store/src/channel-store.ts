import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { qualifiedChannelId, type ChannelRef, type LogEntry, type Receipt } from "@mom/contracts";
import { appendLine } from "./append-line.js";
import { fileSize, type LogCursor, type PlacedEntry, readLogSince, readLogTail } from "./log-reader.js";
import { logEntryValidator, parseJsonLines, parseLogLines, receiptValidator, type SkippedLine } from "./log-lines.js";

export interface ReadLogOptions {
  /** Only entries after the entry with this id; when the id is not in the log, every entry. */
  afterId?: string;
  /** At most this many entries, oldest first, so repeated calls with `afterId` page forward. */
  limit?: number;
}

export interface ReadLogResult {
  entries: LogEntry[];
  skipped: SkippedLine[];
  /** False when `afterId` was given but is not in the log (the cursor is stale). */
  afterIdFound?: boolean;
}

/** Ids kept in memory for deduplication before the set is rebuilt from the log's tail. */
const MAX_RECENT_IDS = 20_000;

/**
 * One channel's files. The runner that owns the channel is its only writer (see docs/scaling.md);
 * within a process, appends are serialised. Nothing here reads the whole log on the path of a
 * message: deduplication looks at the log's last MiB (a message read again after a takeover was
 * logged moments before), and readers move forward from a cursor.
 */
export class ChannelStore {
  readonly logFile: string;
  readonly contextFile: string;
  readonly memoryFile: string;
  readonly receiptsFile: string;
  readonly attachmentsDir: string;
  readonly scratchDir: string;
  readonly skillsDir: string;

  /**
   * Throws when this process may no longer write the channel's files (a runner that lost the
   * channel to another: its fencing check). Checked before every write, queued behind the others.
   */
  writeGuard?: () => void;

  private queue: Promise<unknown> = Promise.resolve();
  private ids?: Set<string>;
  /** Who wrote (mom aside) the entries `ids` holds, by user id. */
  private senders = new Map<string, LogSender>();
  /** The log's size when `ids` was last in step with it. */
  private idsAtSize = -1;
  /** The log's size at the last look, and just after this process's own last line. */
  private logSize = -1;
  private ownEnd = -2;
  private dirsReady?: Promise<void>;

  constructor(
    readonly ref: ChannelRef,
    readonly dir: string,
    /** workspace/MEMORY.md, shared by every channel. */
    readonly globalMemoryFile: string,
  ) {
    this.logFile = join(dir, "log.jsonl");
    this.contextFile = join(dir, "context.jsonl");
    this.memoryFile = join(dir, "MEMORY.md");
    this.receiptsFile = join(dir, "receipts.jsonl");
    this.attachmentsDir = join(dir, "attachments");
    this.scratchDir = join(dir, "scratch");
    this.skillsDir = join(dir, "skills");
  }

  get qualifiedId(): string {
    return qualifiedChannelId(this.ref);
  }

  /** Creates the channel directory tree once; appendLog calls it, others may too. */
  ensureDirs(): Promise<void> {
    if (!this.dirsReady) {
      this.dirsReady = (async () => {
        for (const d of [this.attachmentsDir, this.skillsDir, this.scratchDir]) await mkdir(d, { recursive: true });
      })();
      // A failed mkdir (e.g. permissions fixed meanwhile) must be retried next time, not cached.
      this.dirsReady.catch(() => (this.dirsReady = undefined));
    }
    return this.dirsReady;
  }

  /**
   * Appends the entry unless an entry with its id is already logged, so a redelivered bus
   * message is harmless. Resolves true when written, false for a duplicate. `onNew` is called
   * once the entry is known to be new, before it is written: work that only a new entry needs
   * can start while the line goes to disk.
   */
  appendLog(entry: LogEntry, onNew?: () => void): Promise<boolean> {
    const check = logEntryValidator.check(entry);
    if (!check.ok) return Promise.reject(new Error(`invalid log entry for ${this.qualifiedId}: ${check.reason}`));
    return this.serialise(async () => {
      this.writeGuard?.();
      const ids = await this.loggedIds();
      if (ids.has(entry.id)) return false;
      onNew?.();
      await this.ensureDirs();
      const whole = this.logSize === this.ownEnd ? this.ownEnd : undefined;
      this.idsAtSize = this.ownEnd = await appendLine(this.logFile, JSON.stringify(entry), whole);
      ids.add(entry.id);
      this.noteSender(entry);
      return true;
    });
  }

  /** Entries after a cursor, of at most the last `maxBytes` of the log (see log-reader.ts), queued behind pending appends. */
  readLogSince(cursor: LogCursor | undefined, maxBytes?: number): Promise<{ entries: PlacedEntry[]; rescanned: boolean; skippedBytes: number }> {
    return this.serialise(() => readLogSince(this.logFile, cursor, maxBytes));
  }

  /**
   * Who has been talking: the senders (mom aside) of the log's last MiB and of what was appended
   * since, at a cost that does not grow with history. Read together with the ids that make appends
   * idempotent, so a channel's first message and its first run share one read of the tail.
   */
  recentSenders(): Promise<LogSender[]> {
    return this.serialise(async () => {
      await this.loggedIds();
      return [...this.senders.values()];
    });
  }

  /** The whole log. Queued behind pending appends, so it sees each of them whole and never a half-written line. */
  readLog(opts: ReadLogOptions = {}): Promise<ReadLogResult> {
    return this.serialise(async () => select(parseLogLines(await readOrEmpty(this.logFile)), opts));
  }

  /** A recent log entry (in the log's last MiB) with this id, or undefined. */
  findLogEntry(id: string): Promise<LogEntry | undefined> {
    return this.serialise(async () => {
      if (!(await this.loggedIds()).has(id)) return undefined;
      return (await readLogTail(this.logFile)).find((p) => p.entry.id === id)?.entry;
    });
  }

  /** mom's answer to the message `triggerId`, if it is in the log's last MiB. */
  findReplyTo(triggerId: string): Promise<LogEntry | undefined> {
    return this.serialise(async () => (await readLogTail(this.logFile)).find((p) => p.entry.isBot && p.entry.metadata?.triggerId === triggerId)?.entry);
  }

  /** Appends one receipt to receipts.jsonl (append-only, same torn-line safety as the log). */
  appendReceipt(receipt: Receipt): Promise<void> {
    const check = receiptValidator.check(receipt);
    if (!check.ok) return Promise.reject(new Error(`invalid receipt for ${this.qualifiedId}: ${check.reason}`));
    return this.serialise(async () => {
      this.writeGuard?.();
      await this.ensureDirs();
      await appendLine(this.receiptsFile, JSON.stringify(receipt));
    });
  }

  readReceipts(): Promise<{ entries: Receipt[]; skipped: SkippedLine[] }> {
    return this.serialise(async () => parseJsonLines(await readOrEmpty(this.receiptsFile), receiptValidator, "Receipt"));
  }

  /** Global and channel MEMORY.md; a missing file is an empty memory. */
  async readMemory(): Promise<{ global: string; channel: string }> {
    const [global, channel] = await Promise.all([readOrEmpty(this.globalMemoryFile), readOrEmpty(this.memoryFile)]);
    return { global, channel };
  }

  private serialise<T>(task: () => Promise<T>): Promise<T> {
    const result = this.queue.then(task);
    // One failed append must not wedge the channel: the next one still runs.
    this.queue = result.catch(() => undefined);
    return result;
  }

  // The ids in the log's last MiB plus those appended since. Only intact entries count, so an
  // entry whose line was torn by a crash is written again when its message is read again. A log
  // that changed size behind this process's back (another runner owned the channel meanwhile, or
  // a person truncated it) is read again: ids remembered from before would be stale.
  private async loggedIds(): Promise<Set<string>> {
    const size = (this.logSize = await fileSize(this.logFile));
    if (!this.ids || this.ids.size > MAX_RECENT_IDS || size !== this.idsAtSize) {
      const tail = await readLogTail(this.logFile);
      this.ids = new Set(tail.map((p) => p.entry.id));
      this.senders = new Map();
      for (const { entry } of tail) this.noteSender(entry);
      this.idsAtSize = size;
    }
    return this.ids;
  }

  private noteSender(e: LogEntry): void {
    const s = senderOf(e);
    if (s) this.senders.set(s.user, s);
  }
}

/** Who wrote a log entry. */
export type LogSender = Pick<LogEntry, "user" | "userName" | "displayName">;

/** The person who wrote an entry; undefined for mom's own lines (and other bots'). */
export function senderOf(e: LogEntry): LogSender | undefined {
  return e.isBot ? undefined : { user: e.user, userName: e.userName, ...(e.displayName !== undefined && { displayName: e.displayName }) };
}

function select(all: { entries: LogEntry[]; skipped: SkippedLine[] }, opts: ReadLogOptions): ReadLogResult {
  const at = opts.afterId === undefined ? -1 : all.entries.findIndex((e) => e.id === opts.afterId);
  const end = opts.limit === undefined ? undefined : at + 1 + Math.max(0, opts.limit);
  const entries = all.entries.slice(at + 1, end);
  return opts.afterId === undefined ? { entries, skipped: all.skipped } : { entries, skipped: all.skipped, afterIdFound: at >= 0 };
}

async function readOrEmpty(file: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "";
    throw err;
  }
}
