import type { KV, KvWatchEntry } from "@mom/bus";
import pTimeout from "p-timeout";
import type { Logger } from "pino";

export interface LiveWatchOptions {
  kv: KV;
  /** What the watch is of, for the log ("heartbeats", "channel records"). */
  what: string;
  onEntry: (e: KvWatchEntry) => void;
  log: Logger;
  /** A revision known to be written must have come through the watch within this long, or the watch is stale. */
  staleAfterMs?: number;
  /** How long one attempt to set the watch up (and read the current entries) may take. */
  setupTimeoutMs?: number;
  now?: () => number;
}

const BACKOFF_MS = [250, 500, 1000, 2000, 4000];

/**
 * A watch of every key of a KV bucket that this process can vouch for. It is set up again (with
 * backoff, until it works, saying so) whenever it ends or falls behind: on a NATS cluster a watch
 * silently stops when the server holding its consumer dies, and setting it up again fails while
 * the cluster elects new leaders. `vouched` is false from the moment it is known or suspected to
 * be behind until a new watch has read every current entry — decisions taken on the strength of
 * what it shows wait for that.
 *
 * Behind means: a revision the caller knows was written (`expect`) — its own put, or the bucket's
 * last sequence read from the server — did not come through within `staleAfterMs`.
 */
export class LiveWatch {
  private iter?: { stop(): void };
  private generation = 0;
  private highest = 0;
  private expected: Array<{ revision: number; at: number }> = [];
  private ready = false;
  private stopped = false;
  private rebuilding?: Promise<void>;
  private readonly now: () => number;
  private readonly staleAfterMs: number;
  /** Since when the watch has not been current, while it is not. */
  private downSince?: number;

  constructor(private readonly o: LiveWatchOptions) {
    this.now = o.now ?? Date.now;
    this.staleAfterMs = o.staleAfterMs ?? 3000;
  }

  /** True while the watch is set up, has read every current entry and has shown every expected revision in time. */
  get vouched(): boolean {
    return this.ready && !this.overdue();
  }

  /** Sets the watch up; retried until it works (each failure logged). Resolves once the current entries are read. */
  start(): Promise<void> {
    return this.rebuild("starting");
  }

  /** `revision` was written to the bucket: the watch must bring it within staleAfterMs. */
  expect(revision: number): void {
    if (revision <= this.highest) return;
    this.expected.push({ revision, at: this.now() });
  }

  /** Since when the watch has been behind (the oldest revision it should have brought), if it is. */
  get behindSince(): number | undefined {
    if (!this.ready) return this.downSince ?? this.now();
    if (!this.overdue()) return undefined;
    return Math.min(...this.expected.map((x) => x.at));
  }

  /** Resolves once every expected revision came through, setting the watch up again if one is overdue. */
  async caughtUp(): Promise<void> {
    while (!this.stopped) {
      if (this.rebuilding || this.overdue() || !this.ready) await this.check();
      else if (this.expected.length === 0) return;
      else await new Promise((r) => setTimeout(r, 25).unref());
    }
  }

  /** Sets the watch up again if it is behind; resolves when it is current (or stopped). */
  async check(): Promise<void> {
    if (this.rebuilding) return this.rebuilding;
    if (this.ready && !this.overdue()) return;
    return this.rebuild(this.ready ? `it did not bring revision ${Math.min(...this.expected.map((x) => x.revision))} within ${this.staleAfterMs} ms` : "it ended");
  }

  /** The bucket's newest revision, read from the server now (to `expect` it), or undefined when the server cannot say. */
  async lastRevision(): Promise<number | undefined> {
    try {
      const s = await pTimeout(this.o.kv.status(), { milliseconds: 5000 });
      return s.streamInfo.state.last_seq;
    } catch {
      return undefined;
    }
  }

  /** Sets the watch up again now (every current entry is read again). */
  restart(why: string): Promise<void> {
    return this.rebuild(why);
  }

  stop(): void {
    this.stopped = true;
    this.iter?.stop();
  }

  private overdue(): boolean {
    this.expected = this.expected.filter((x) => x.revision > this.highest);
    return this.expected.some((x) => this.now() - x.at > this.staleAfterMs);
  }

  private rebuild(why: string): Promise<void> {
    this.rebuilding ??= (async () => {
      this.ready = false;
      this.downSince ??= this.now();
      if (why !== "starting") this.o.log.warn({ watch: this.o.what, reason: why }, `the watch of ${this.o.what} is behind; setting it up again`);
      for (let attempt = 0; !this.stopped; attempt++) {
        try {
          // A request in flight while the connection moves to another server can hang for good.
          await pTimeout(this.setUp(), { milliseconds: (this.o.setupTimeoutMs ?? 10_000) + 5000, message: `setting the watch up took too long` });
          if (attempt > 0 || why !== "starting") this.o.log.info({ watch: this.o.what, attempts: attempt + 1, downMs: this.now() - this.downSince! }, `watching ${this.o.what} again`);
          this.downSince = undefined;
          return;
        } catch (err) {
          const pause = BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!;
          const log = this.now() - this.downSince! > 15_000 ? this.o.log.error.bind(this.o.log) : this.o.log.warn.bind(this.o.log);
          log({ err, watch: this.o.what, attempt: attempt + 1, retryInMs: pause, downMs: this.now() - this.downSince! }, `could not watch ${this.o.what}; retrying`);
          await new Promise((r) => setTimeout(r, pause).unref());
        }
      }
    })().finally(() => (this.rebuilding = undefined));
    return this.rebuilding;
  }

  private async setUp(): Promise<void> {
    this.iter?.stop();
    this.iter = undefined;
    const generation = ++this.generation;
    const timeoutMs = this.o.setupTimeoutMs ?? 10_000;
    let loaded!: () => void;
    const current = new Promise<void>((r) => (loaded = r));
    // Read first: every revision up to here that still exists is among the entries the watch reads.
    const before = (await this.o.kv.status()).streamInfo.state;
    const iter = await this.o.kv.watch();
    // Stopped, or given up on (a later attempt runs): this watch is nobody's.
    if (this.stopped || generation !== this.generation) return void iter.stop();
    this.iter = iter;
    void (async () => {
      for await (const e of iter) {
        if (generation !== this.generation) return;
        this.highest = Math.max(this.highest, e.revision);
        this.o.onEntry(e);
        if (e.delta === 0) loaded();
      }
    })()
      .catch((err) => this.o.log.warn({ err, watch: this.o.what }, `the watch of ${this.o.what} failed`))
      .finally(() => {
        // Ended without being asked to: whatever it shows from now on is frozen.
        if (generation === this.generation && !this.stopped) {
          this.ready = false;
          void this.rebuild("it ended");
        }
      });
    // An empty bucket has no last entry to mark the end of the current ones.
    if (before.messages === 0) loaded();
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([current, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the current entries did not come within ${timeoutMs} ms`)), timeoutMs)))]);
    } catch (err) {
      iter.stop();
      throw err;
    } finally {
      clearTimeout(timer);
    }
    if (generation === this.generation) {
      // Expected revisions the new watch did not bring no longer exist (overwritten, expired); the
      // others are judged against this watch from now on.
      this.expected = this.expected.filter((x) => x.revision > before.last_seq);
      for (const x of this.expected) x.at = Math.max(x.at, this.now());
      this.ready = true;
    }
  }
}

/** The JSON in a KV value, or undefined when it is not JSON. */
export function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
