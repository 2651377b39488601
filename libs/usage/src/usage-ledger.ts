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

/**
 * The usage ledger as a runner sees it: every model call is appended to the `MOM_USAGE` stream
 * (so it survives restarts and every replica sees it), and this month's records are followed into
 * running totals for the spend limits. A record counts once it has come back from the stream,
 * whichever replica wrote it.
 */
export class UsageLedger {
  readonly totals = new SpendTotals();
  private lastSeq = 0;
  private waiters: Array<{ seq: number; resolve: () => void }> = [];

  private constructor(
    private readonly stream: RecordStream,
    private readonly onInvalid: (seq: number, reason: string) => void,
  ) {}

  private following?: { stop(): Promise<void> };

  static async open(bus: Bus, opts: { replicas?: number; onInvalid?: (seq: number, reason: string) => void } = {}): Promise<UsageLedger> {
    const ledger = new UsageLedger(await openLedgerStream(bus, opts.replicas), opts.onInvalid ?? (() => {}));
    const f = await ledger.stream.follow(monthStart(new Date()), (r) => ledger.take(r));
    ledger.following = f;
    await f.caughtUp;
    return ledger;
  }

  /** Appends one call's usage and resolves once the totals include it (or after `waitMs`). */
  async record(r: UsageRecord, waitMs = 2000): Promise<void> {
    const [adapter, channel] = [r.adapter, parseQualifiedChannelId(r.channel).channelId];
    const { seq } = await this.stream.append(`${adapter}.${escapeChannelToken(channel)}`, r, r.id);
    if (seq <= this.lastSeq) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      this.waiters.push({ seq, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  async close(): Promise<void> {
    await this.following?.stop();
  }

  private take(r: StreamRecord): void {
    const { records, invalid } = validRecords([r]);
    for (const rec of records) this.totals.apply(rec);
    for (const i of invalid) this.onInvalid(i.seq, i.reason);
    this.lastSeq = Math.max(this.lastSeq, r.seq);
    const ready = this.waiters.filter((w) => w.seq <= this.lastSeq);
    this.waiters = this.waiters.filter((w) => w.seq > this.lastSeq);
    for (const w of ready) w.resolve();
  }
}
