import type { KV, KvWatchEntry } from "@mom/bus";
import { ChannelRecord, validator } from "@mom/contracts";
import type { Logger } from "pino";
import { jsonOf, LiveWatch } from "./watch-bucket.js";

const checkRecord = validator(ChannelRecord);

export interface Versioned {
  record: ChannelRecord;
  /** KV revision: every write names the revision it read, so two writers can never both win. */
  revision: number;
}

/** Thrown when a compare-and-set lost: somebody else changed the channel's record first. */
export class RecordConflict extends Error {
  override name = "RecordConflict";
}

/**
 * Every channel's ownership record (KV bucket MOM_CHANNELS), mirrored in memory by a watch, and
 * written only by compare-and-set. The mirror may lag; decisions that matter re-read or CAS.
 */
export class ChannelDirectory {
  private readonly records = new Map<string, Versioned>();
  private readonly counts = new Map<string, number>();
  private readonly watching: LiveWatch;
  private listener: (key: string, v: Versioned | undefined) => void = () => {};

  constructor(
    private readonly kv: KV,
    private readonly log: Logger,
    now?: () => number,
  ) {
    this.watching = new LiveWatch({ kv, what: "channel records", onEntry: (e) => this.onEntry(e), log, ...(now && { now }) });
  }

  /** Loads every record, then keeps the mirror current and tells `onChange` about each change. */
  async start(onChange: (key: string, v: Versioned | undefined) => void): Promise<void> {
    await this.watching.start();
    this.listener = onChange;
  }

  /** Whether the mirror is known to be current (its watch brought everything known to be written, in time). */
  get vouched(): boolean {
    return this.watching.vouched;
  }

  /**
   * Asks the server for the bucket's newest revision: the watch must bring it. A watch that has
   * not brought what was there at an earlier check is set up again (changes missed are replayed).
   */
  async check(): Promise<void> {
    const last = await this.watching.lastRevision();
    if (last !== undefined) this.watching.expect(last);
    await this.watching.check();
  }

  /** Resolves once the mirror holds everything written before this call (the watch set up again if it must be). */
  async caughtUp(): Promise<void> {
    const last = await this.watching.lastRevision();
    if (last !== undefined) this.watching.expect(last);
    await this.watching.caughtUp();
  }

  private onEntry(e: KvWatchEntry): void {
    if (e.operation !== "PUT") return this.apply(e.key, undefined);
    // Our own writes come back here too (twice per run): no need to parse what we already hold.
    if ((this.records.get(e.key)?.revision ?? 0) >= e.revision) return;
    const parsed = checkRecord.check(jsonOf(e.string()));
    if (parsed.ok) this.apply(e.key, { record: parsed.value, revision: e.revision });
    else this.log.error({ key: e.key, reason: parsed.reason }, "ignoring an invalid channel record");
  }

  stop(): void {
    this.watching.stop();
  }

  get(key: string): Versioned | undefined {
    return this.records.get(key);
  }

  entries(): IterableIterator<[string, Versioned]> {
    return this.records.entries();
  }

  /** The record as stored now (not the mirror). */
  async read(key: string): Promise<Versioned | undefined> {
    const e = await this.kv.get(key);
    if (!e || e.operation !== "PUT") return undefined;
    const parsed = checkRecord.check(jsonOf(e.string()));
    if (!parsed.ok) throw new Error(`channel record ${key} is invalid: ${parsed.reason}`);
    return { record: parsed.value, revision: e.revision };
  }

  /**
   * Writes the record if it is still at `revision` (0: if it does not exist yet). Throws
   * RecordConflict when somebody else wrote first; other errors (NATS down) propagate.
   */
  async write(key: string, record: ChannelRecord, revision: number): Promise<Versioned> {
    let next: number;
    try {
      next = revision === 0 ? await this.kv.create(key, JSON.stringify(record)) : await this.kv.update(key, JSON.stringify(record), revision);
    } catch (err) {
      if (isConflict(err)) throw new RecordConflict(`channel ${key} changed under revision ${revision}`);
      throw err;
    }
    const v = { record, revision: next };
    this.watching.expect(next);
    this.apply(key, v);
    return v;
  }

  /** How many channels each runner owns, by the mirror. */
  ownedBy(runner: string): number {
    return this.counts.get(runner) ?? 0;
  }

  private apply(key: string, v: Versioned | undefined): void {
    const have = this.records.get(key);
    if (v && have && have.revision >= v.revision) return; // an echo of our own write, or stale
    this.count(have?.record.owner, -1);
    this.count(v?.record.owner, +1);
    if (v) this.records.set(key, v);
    else this.records.delete(key);
    this.listener(key, v);
  }

  private count(owner: string | null | undefined, by: number): void {
    if (!owner) return;
    const n = (this.counts.get(owner) ?? 0) + by;
    if (n > 0) this.counts.set(owner, n);
    else this.counts.delete(owner);
  }
}

function isConflict(err: unknown): boolean {
  const e = err as { code?: number; message?: string };
  // 10071: wrong last sequence (update); create of an existing key reports the same or "key exists".
  return e?.code === 10071 || /wrong last sequence|key exists/i.test(e?.message ?? "");
}

