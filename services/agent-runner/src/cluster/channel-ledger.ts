import type { ChannelRecord, InterruptedRun } from "@mom/contracts";
import pRetry, { AbortError } from "p-retry";
import type { Logger } from "pino";
import { type ChannelDirectory, RecordConflict, type Versioned } from "./channel-directory.js";

/** This runner no longer owns the channel: stop, write nothing more. */
export class ChannelLost extends Error {
  override name = "ChannelLost";
  constructor(key: string, why = "now belongs to another runner") {
    super(`channel ${key} ${why}`);
  }
}

/** How long after its last run a quiet channel's progress is saved. */
export const SAVE_DEBOUNCE_MS = 250;
const SAVE_RETRY_FOR_MS = 120_000;

/**
 * How far an owned channel's messages are done, persisted in its record by compare-and-set. The
 * owner handles messages in order; `doneSeq` is the last sequence before the oldest one still in
 * hand, so a new owner re-reads exactly what was not finished. The record also names the run in
 * progress, which is how a new owner knows a run was interrupted and what to resume.
 */
export class ChannelLedger {
  private v: Versioned;
  private readonly pending = new Set<number>();
  private lastSeq: number;
  private writes: Promise<unknown> = Promise.resolve();
  private timer?: NodeJS.Timeout;
  private lost = false;
  /** The run the previous owner left unfinished (read once, when this runner took the channel). */
  readonly interrupted?: InterruptedRun;

  constructor(
    private readonly dir: ChannelDirectory,
    readonly key: string,
    v: Versioned,
    private readonly log: Logger,
    private readonly onLost: () => void,
    /** Taken back after this runner's own outage or failure: an unfinished run is not a crash. */
    readonly excused = false,
  ) {
    this.v = v;
    this.lastSeq = v.record.doneSeq;
    this.interrupted = v.record.run;
  }

  get record(): ChannelRecord {
    return this.v.record;
  }

  get isLost(): boolean {
    return this.lost;
  }

  /** This runner is giving the channel up itself (release): a record naming somebody else is no loss. */
  get releasing(): boolean {
    return this.giving && !this.lost;
  }
  private giving = false;

  /**
   * Throws ChannelLost unless this runner still holds the channel: the record's revision is the
   * fencing token, and every write to the channel's files (log, receipts, context) checks it first.
   * A newer revision naming another owner (a takeover this runner's mirror has seen) fences the
   * channel at once, before the next write rather than at the next save of progress.
   */
  assertOwner(): void {
    if (this.lost) throw new ChannelLost(this.key);
    // Given up here: nothing more is written, whether or not the record naming the next owner landed yet.
    if (this.giving) throw new ChannelLost(this.key, "was handed over by this runner");
    const seen = this.dir.get(this.key);
    if (seen && seen.revision > this.v.revision && seen.record.owner !== this.v.record.owner) {
      this.lost = true;
      this.log.warn({ channel: this.key, revision: seen.revision, owner: seen.record.owner }, "channel was taken over by another runner; writing nothing more");
      this.onLost();
      throw new ChannelLost(this.key);
    }
  }

  /** The first sequence a reader of this channel must start at. */
  get resumeSeq(): number {
    return this.v.record.doneSeq + 1;
  }

  /** A message came in; false when it was already seen (a re-read), which the caller drops. */
  begin(seq: number): boolean {
    if (seq <= this.lastSeq) return false;
    this.lastSeq = seq;
    this.pending.add(seq);
    return true;
  }

  /** A run starts for the message at `seq`: record it before anything of it reaches the channel. */
  runStarting(run: Omit<InterruptedRun, "phase">): Promise<void> {
    // With the progress of everything finished before it: a record that named this run while its
    // doneSeq still stopped before the previous one would have the next owner answer that one again.
    return this.save((r) => ({ ...this.advanced(r), run: { ...run, phase: "running" } }));
  }

  /** The recorded run never began (the channel was set down first): the next owner takes its message as new. */
  runNotStarted(): Promise<void> {
    return this.save((r) => {
      const { run: _, ...rest } = this.advanced(r);
      return rest;
    });
  }

  /** The run was stopped on purpose (shutdown): the next owner resumes it without counting a crash. */
  handedOver(): Promise<void> {
    return this.save((r) => (r.run ? { ...r, run: { ...r.run, phase: "handed-over" } } : r));
  }

  /**
   * The message at `seq` is fully handled; saved within 250 ms, together with whatever else
   * finished meanwhile. (A crash before the save is harmless: the next owner finds the run's answer
   * in the log and announces its end again under the same msg-id.)
   */
  done(seq: number): Promise<void> {
    this.pending.delete(seq);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.save((r) => this.advanced(r)).catch(() => {});
    }, SAVE_DEBOUNCE_MS);
    return Promise.resolve();
  }

  /** Saves what is done now (tests, shutdown). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    return this.save((r) => this.advanced(r));
  }

  /** Gives the channel to `owner` (null: nobody, `pending` saying whether work is left). */
  release(owner: string | null, pending: boolean): Promise<void> {
    clearTimeout(this.timer);
    this.giving = true;
    return this.save((r) => {
      const { pending: _, ...rest } = this.advanced(r);
      return { ...rest, owner, ...(owner === null && pending && { pending: true }) };
    });
  }

  private advanced(r: ChannelRecord): ChannelRecord {
    const oldest = Math.min(...this.pending);
    const doneSeq = Math.max(r.doneSeq, this.pending.size ? oldest - 1 : this.lastSeq);
    const { run, ...rest } = r;
    const keepRun = run !== undefined && run.seq > doneSeq;
    return { ...rest, doneSeq, ...(keepRun && { run }) };
  }

  /** Serialised compare-and-set writes; NATS outages are retried, a lost race fences the channel. */
  private save(change: (r: ChannelRecord) => ChannelRecord): Promise<void> {
    const write = this.writes.then(async () => {
      if (this.lost) throw new ChannelLost(this.key);
      const next = change(this.v.record);
      if (JSON.stringify(next) === JSON.stringify(this.v.record)) return;
      let unsure = false;
      // NATS failures are retried for SAVE_RETRY_FOR_MS (backoff 250 ms → 2 s); a lost race is not.
      await pRetry(
        async () => {
          try {
            this.v = await this.dir.write(this.key, next, this.v.revision);
          } catch (err) {
            // A timed-out attempt may have landed: the retry then conflicts with our own write,
            // which is no takeover (it looked like one after every NATS restart).
            if (err instanceof RecordConflict && unsure) {
              const stored = await this.dir.read(this.key).catch(() => undefined);
              if (stored && JSON.stringify(stored.record) === JSON.stringify(next)) {
                this.v = stored;
                return;
              }
            }
            if (err instanceof RecordConflict) {
              this.lost = true;
              this.log.warn({ channel: this.key }, "channel was taken over by another runner; stopping here");
              this.onLost();
              throw new AbortError(new ChannelLost(this.key));
            }
            unsure = true;
            throw err;
          }
        },
        {
          retries: Number.POSITIVE_INFINITY,
          maxRetryTime: SAVE_RETRY_FOR_MS,
          minTimeout: 250,
          maxTimeout: 2000,
          unref: true,
          shouldRetry: ({ attemptNumber, error }) => {
            if (attemptNumber === 1) this.log.warn({ err: error, channel: this.key }, "could not save channel progress; retrying");
            return true;
          },
        },
      );
    });
    this.writes = write.catch(() => undefined);
    return write;
  }
}
