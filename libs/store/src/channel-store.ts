import type { FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { qualifiedChannelId, type ChannelRef, type LogEntry, type Receipt } from "@mom/contracts";
import { appendLine } from "./append-line.js";
import { moveAsideBeneath, openBeneath, openDirBeneath, type OpenMode, readBeneath, RefusedPathError } from "./beneath.js";
import { fileSize, type LogCursor, type PlacedEntry, readLogSince, readLogTail } from "./log-reader.js";
import { logEntryValidator, parseJsonLines, parseLogLines, receiptValidator, type SkippedLine } from "./log-lines.js";
import { jobRecordProblem, type JobRecord, type JobStarted, runningJobs } from "./job-records.js";
import PQueue from "p-queue";

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

/** The files in a channel's directory that only the runner writes (read-only to the channel's tools). */
export const RUNNER_FILES = ["log.jsonl", "context.jsonl", "receipts.jsonl", "jobs.jsonl"] as const;
/** The directories the runner makes in a channel's directory. */
const CHANNEL_DIRS = ["attachments", "skills", "scratch"] as const;

/** A MEMORY.md larger than this is refused by readMemory (the prompt reads only its tail: prompt-files.ts). */
const MEMORY_READ_MAX = 1 << 20;

/** Ids kept in memory for deduplication before the set is rebuilt from the log's tail. */
const MAX_RECENT_IDS = 20_000;

/**
 * One channel's files. The runner that owns the channel is its only writer (see docs/scaling.md);
 * within a process, appends are serialised. Nothing here reads the whole log on the path of a
 * message: deduplication looks at the log's last MiB (a message read again after a takeover was
 * logged moments before), and readers move forward from a cursor. Every file is opened beneath
 * the channel's directory without following a symlink (beneath.ts): whatever the channel's agent
 * did to its directory, nothing read or written here is outside it.
 */
export class ChannelStore {
  readonly logFile: string;
  readonly contextFile: string;
  readonly memoryFile: string;
  readonly receiptsFile: string;
  /** The background jobs running here (job-records.ts), so the channel's next owner can say which were lost. */
  readonly jobsFile: string;
  readonly attachmentsDir: string;
  readonly scratchDir: string;
  readonly skillsDir: string;

  /**
   * Throws when this process may no longer write the channel's files (a runner that lost the
   * channel to another: its fencing check). Checked before every write, queued behind the others.
   */
  writeGuard?: () => void;

  /** Told about an entry of the channel's directory the runner refused or moved aside (a symlink, FIFO, hard link), for its log. */
  onFileProblem?: (problem: string) => void;

  /** One task at a time, in call order; a failed one does not stop the next. */
  private readonly queue = new PQueue({ concurrency: 1 });
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
    this.jobsFile = join(dir, "jobs.jsonl");
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
      this.dirsReady = this.makeDirs();
      // A failed mkdir (e.g. permissions fixed meanwhile) must be retried next time, not cached.
      this.dirsReady.catch(() => (this.dirsReady = undefined));
    }
    return this.dirsReady;
  }

  /**
   * The directories, and the runner's own files (log.jsonl, context.jsonl, receipts.jsonl) made
   * when missing. A runner file that is not a regular file of one link (the agent made it a
   * symlink, FIFO or hard link while it could) is moved aside to `<name>.refused-<time>` and made
   * anew, and told to onFileProblem. Not cached: the runner calls it each time it hands the
   * channel to an agent, before the sandbox mounts these files read-only for the channel's tools.
   */
  async prepareFiles(): Promise<void> {
    this.writeGuard?.();
    await this.makeDirs();
    for (const f of RUNNER_FILES) await (await this.openRunnerFile(f)).close();
  }

  // A directory that is not one (a symlink, a file) is left alone and told: writes into it are refused.
  private async makeDirs(): Promise<void> {
    for (const d of CHANNEL_DIRS) {
      try {
        await (await openDirBeneath(this.dir, d, { createDirs: true }))?.close();
      } catch (err) {
        if (!(err instanceof RefusedPathError)) throw err;
        this.onFileProblem?.(`${err.message}; nothing is written into it`);
      }
    }
  }

  /** context.jsonl, opened for appending (pi's session writes go through this descriptor; see session-path.ts). */
  async openContext(): Promise<FileHandle> {
    return this.openRunnerFile("context.jsonl");
  }

  /**
   * `/new`: context.jsonl (the agent session) is moved aside to `context-<time>.jsonl` in the
   * channel's directory, so the next agent starts an empty one; log.jsonl stays. Resolves the
   * archive's name, or undefined when there was no context to keep (missing or empty).
   */
  async archiveContext(): Promise<string | undefined> {
    this.writeGuard?.();
    const fh = await openBeneath(this.dir, "context.jsonl", "read");
    if (!fh) return undefined;
    const size = await fh.stat().then((st) => st.size, () => 0).finally(() => fh.close());
    if (size === 0) return undefined;
    return moveAsideBeneath(this.dir, "context.jsonl", `context-${new Date().toISOString().replace(/[:.]/g, "-")}.jsonl`);
  }

  private async openRunnerFile(name: (typeof RUNNER_FILES)[number]): Promise<FileHandle> {
    try {
      return (await openBeneath(this.dir, name, "append"))!;
    } catch (err) {
      if (!(err instanceof RefusedPathError)) throw err;
      const aside = await moveAsideBeneath(this.dir, name);
      this.onFileProblem?.(`${err.message}; moved aside to ${aside} and made anew`);
      return (await openBeneath(this.dir, name, "append"))!;
    }
  }

  private opener(name: string, mode: OpenMode): () => Promise<FileHandle> {
    return async () => (await openBeneath(this.dir, name, mode))!;
  }

  private reader(name: string): () => Promise<FileHandle | undefined> {
    return () => openBeneath(this.dir, name, "read");
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
      this.idsAtSize = this.ownEnd = await appendLine(this.opener("log.jsonl", "append"), JSON.stringify(entry), whole);
      ids.add(entry.id);
      this.noteSender(entry);
      return true;
    });
  }

  /** Entries after a cursor, of at most the last `maxBytes` of the log (see log-reader.ts), queued behind pending appends. */
  readLogSince(cursor: LogCursor | undefined, maxBytes?: number): Promise<{ entries: PlacedEntry[]; rescanned: boolean; skippedBytes: number }> {
    return this.serialise(() => readLogSince(this.reader("log.jsonl"), cursor, maxBytes));
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
    return this.serialise(async () => select(parseLogLines(await readOrEmpty(this.dir, "log.jsonl")), opts));
  }

  /** A recent log entry (in the log's last MiB) with this id, or undefined. */
  findLogEntry(id: string): Promise<LogEntry | undefined> {
    return this.serialise(async () => {
      if (!(await this.loggedIds()).has(id)) return undefined;
      return (await readLogTail(this.reader("log.jsonl"))).find((p) => p.entry.id === id)?.entry;
    });
  }

  /** mom's answer to the message `triggerId`, if it is in the log's last MiB. */
  findReplyTo(triggerId: string): Promise<LogEntry | undefined> {
    return this.serialise(async () => (await readLogTail(this.reader("log.jsonl"))).find((p) => p.entry.isBot && p.entry.metadata?.triggerId === triggerId)?.entry);
  }

  /** Appends one receipt to receipts.jsonl (append-only, same torn-line safety as the log). */
  appendReceipt(receipt: Receipt): Promise<void> {
    const check = receiptValidator.check(receipt);
    if (!check.ok) return Promise.reject(new Error(`invalid receipt for ${this.qualifiedId}: ${check.reason}`));
    return this.serialise(async () => {
      this.writeGuard?.();
      await this.ensureDirs();
      await appendLine(this.opener("receipts.jsonl", "append"), JSON.stringify(receipt));
    });
  }

  /** Appends one line to jobs.jsonl (a job started or ended); fenced like every write. */
  appendJobRecord(record: JobRecord): Promise<void> {
    const problem = jobRecordProblem(record);
    if (problem) return Promise.reject(new Error(`invalid job record for ${this.qualifiedId}: ${problem}`));
    return this.serialise(async () => {
      this.writeGuard?.();
      await appendLine(this.opener("jobs.jsonl", "append"), JSON.stringify(record));
    });
  }

  /** The jobs jobs.jsonl says were started and never ended (running, or lost with their runner). */
  readRunningJobs(): Promise<{ running: JobStarted[]; skipped: SkippedLine[] }> {
    return this.serialise(async () => runningJobs(await readOrEmpty(this.dir, "jobs.jsonl")));
  }

  /**
   * Empties jobs.jsonl when it names no running job (it would otherwise grow by two lines a job);
   * read and emptied in one step of the queue, so a job recorded meanwhile is never lost. A crash
   * halfway leaves it whole or empty, both right when nothing runs.
   */
  compactJobRecords(): Promise<void> {
    return this.serialise(async () => {
      if (runningJobs(await readOrEmpty(this.dir, "jobs.jsonl")).running.length > 0) return;
      this.writeGuard?.();
      const fh = await openBeneath(this.dir, "jobs.jsonl", "write");
      try {
        await fh!.truncate(0);
      } finally {
        await fh!.close();
      }
    });
  }

  readReceipts(): Promise<{ entries: Receipt[]; skipped: SkippedLine[] }> {
    return this.serialise(async () => parseJsonLines(await readOrEmpty(this.dir, "receipts.jsonl"), receiptValidator, "Receipt"));
  }

  /** Global and channel MEMORY.md; a missing file is an empty memory. */
  async readMemory(): Promise<{ global: string; channel: string }> {
    const [global, channel] = await Promise.all([
      readOrEmpty(dirname(this.globalMemoryFile), basename(this.globalMemoryFile), MEMORY_READ_MAX),
      readOrEmpty(this.dir, "MEMORY.md", MEMORY_READ_MAX),
    ]);
    return { global, channel };
  }

  private serialise<T>(task: () => Promise<T>): Promise<T> {
    // One failed append must not wedge the channel: its promise rejects, the next one still runs.
    return this.queue.add(task);
  }

  // The ids in the log's last MiB plus those appended since. Only intact entries count, so an
  // entry whose line was torn by a crash is written again when its message is read again. A log
  // that changed size behind this process's back (another runner owned the channel meanwhile, or
  // a person truncated it) is read again: ids remembered from before would be stale.
  private async loggedIds(): Promise<Set<string>> {
    const size = (this.logSize = await fileSize(this.reader("log.jsonl")));
    if (!this.ids || this.ids.size > MAX_RECENT_IDS || size !== this.idsAtSize) {
      const tail = await readLogTail(this.reader("log.jsonl"));
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

/** A whole file beneath `root` as text; a missing file is empty. */
async function readOrEmpty(root: string, rel: string, maxBytes = Number.MAX_SAFE_INTEGER): Promise<string> {
  return (await readBeneath(root, rel, maxBytes))?.toString("utf8") ?? "";
}
