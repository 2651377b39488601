import { type Bus, openRecordStream, type RecordStream, type StreamRecord } from "@mom/bus";
import { escapeChannelToken, parseQualifiedChannelId, UsageRecord } from "@mom/contracts";
import { Compile } from "typebox/compile";
import { monthStart } from "./periods.js";
import { SpendTotals } from "./spend-totals.js";

/** Ledger records are kept this long (13 months: a year of monthly reports plus the current month). */
export const LEDGER_MAX_AGE_MS = 400 * 24 * 3600_000;

const checkRecord = Compile(UsageRecord);

export async function openLedgerStream(bus: Bus, replicas?: number): Promise<RecordStream> {
  return openRecordStream(bus, { key: "USAGE", token: "usage", maxAgeMs: LEDGER_MAX_AGE_MS, ...(replicas !== undefined && { replicas }) });
}

/** Ledger entries that pass the schema; the others are returned apart with the reason. */
export function validRecords(records: StreamRecord[]): { records: UsageRecord[]; invalid: Array<{ seq: number; reason: string }> } {
  const out: UsageRecord[] = [];
  const invalid: Array<{ seq: number; reason: string }> = [];
  for (const r of records) {
    if (checkRecord.Check(r.data)) out.push(r.data);
    else invalid.push({ seq: r.seq, reason: r.data === undefined ? "not JSON" : ([...checkRecord.Errors(r.data)][0]?.message ?? "invalid") });
  }
  return { records: out, invalid };
}

export interface UsageLedgerOptions {
  replicas?: number;
  /**
   * False: only append, `totals` stay empty. Reading every replica's records back costs a delivery
   * per model call, which only spend limits need.
   */
  follow?: boolean;
  /** Hears of every record that fails the schema (it is never counted). */
  onInvalid?: (record: StreamRecord, reason: string) => void;
  /** Wall time: which month is replayed at start (tests start a ledger at a month's first second). */
  now?: () => Date;
  /**
   * How long one record is retried through a NATS outage (a leader election takes 5-10 s): as long
   * as a run's events (`runner.publishRetrySeconds`), or the usage of runs in flight is lost and
   * the limits under-count. The record's msg-id drops any copy that did land.
   */
  appendRetryMs?: number;
}

/**
 * The usage ledger as a runner sees it: every model call is appended to the `MOM_USAGE` stream
 * (so it survives restarts and every replica sees it), and this month's records are followed into
 * running totals for the spend limits. A replica counts its own record as soon as the stream has
 * acknowledged it (and not again when it comes back); the others' as they arrive.
 */
export class UsageLedger {
  readonly totals = new SpendTotals();
  private lastSeq = 0;
  /** Own records already counted, by stream sequence, until the follower passes them. */
  private readonly countedEarly = new Set<number>();

  private constructor(
    private readonly stream: RecordStream,
    private readonly onInvalid: (record: StreamRecord, reason: string) => void,
    private readonly appendRetryMs: number | undefined,
  ) {}

  private following?: { stop(): Promise<void> };

  /**
   * Resolves once this month's records are in `totals`. The follower keeps going across months:
   * totals are kept per UTC day and month of each record's `ts`, so a new period starts from zero
   * whenever the clock reaches it, however long ago the ledger was opened.
   */
  static async open(bus: Bus, opts: UsageLedgerOptions = {}): Promise<UsageLedger> {
    const ledger = new UsageLedger(await openLedgerStream(bus, opts.replicas), opts.onInvalid ?? (() => {}), opts.appendRetryMs);
    if (opts.follow === false) return ledger;
    const f = await ledger.stream.follow(monthStart((opts.now ?? (() => new Date()))()), (r) => ledger.take(r));
    ledger.following = f;
    await f.caughtUp;
    return ledger;
  }

  /** Appends one call's usage; the totals include it when this resolves. */
  async record(r: UsageRecord): Promise<void> {
    const suffix = `${r.adapter}.${escapeChannelToken(parseQualifiedChannelId(r.channel).channelId)}`;
    const { seq, duplicate } = await this.stream.append(suffix, r, r.id, { ...(this.appendRetryMs !== undefined && { retryForMs: this.appendRetryMs }) });
    if (!this.following || duplicate || seq <= this.lastSeq) return;
    this.totals.apply(r);
    this.countedEarly.add(seq);
  }

  async close(): Promise<void> {
    await this.following?.stop();
  }

  private take(r: StreamRecord): void {
    this.lastSeq = Math.max(this.lastSeq, r.seq);
    if (this.countedEarly.delete(r.seq)) return;
    const { records, invalid } = validRecords([r]);
    for (const rec of records) this.totals.apply(rec);
    for (const i of invalid) this.onInvalid(r, i.reason);
  }
}
