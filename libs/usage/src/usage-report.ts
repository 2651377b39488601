import type { UsageRecord } from "@mom/contracts";

export type UsageGrouping = "channel" | "adapter" | "model";

export interface UsageRow {
  key: string;
  calls: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
  costUsd: number;
  /** Calls that used tokens but cost nothing: their model has no prices (no `cost` in models.json). */
  unpriced: number;
  /** Calls recorded at mom's estimate: answers stopped mid-stream (UsageRecord.estimated). */
  estimated: number;
}

function keyOf(r: UsageRecord, by: UsageGrouping): string {
  return by === "channel" ? r.channel : by === "adapter" ? r.adapter : `${r.provider}/${r.model}`;
}

/** Totals per channel, adapter or model, largest cost first, and the grand total. */
export function summarizeUsage(records: UsageRecord[], by: UsageGrouping): { rows: UsageRow[]; total: UsageRow } {
  const rows = new Map<string, UsageRow>();
  const empty = (key: string): UsageRow => ({ key, calls: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, costUsd: 0, unpriced: 0, estimated: 0 });
  const total = empty("total");
  for (const r of records) {
    const key = keyOf(r, by);
    const row = rows.get(key) ?? empty(key);
    for (const t of [row, total]) {
      t.calls++;
      t.input += r.input;
      t.output += r.output;
      t.cacheRead += r.cacheRead;
      t.cacheWrite += r.cacheWrite;
      t.totalTokens += r.totalTokens;
      t.costUsd += r.costUsd;
      if (r.costUsd === 0 && r.totalTokens > 0) t.unpriced++;
      if (r.estimated) t.estimated++;
    }
    rows.set(key, row);
  }
  return { rows: [...rows.values()].sort((a, b) => b.costUsd - a.costUsd || b.totalTokens - a.totalTokens || a.key.localeCompare(b.key)), total };
}

/** A plain table for the terminal. */
export function formatUsageTable(summary: { rows: UsageRow[]; total: UsageRow }, by: UsageGrouping): string {
  const head = [by, "calls", "input", "output", "cache read", "cache write", "tokens", "cost"];
  const n = (x: number) => x.toLocaleString("en-US");
  // A model without prices is `$?`, not `$0.0000`; a row mixing priced and unpriced calls is a lower bound.
  const cost = (r: UsageRow) => (r.unpriced === 0 ? `$${r.costUsd.toFixed(4)}` : r.unpriced === r.calls ? "$?" : `$${r.costUsd.toFixed(4)} + ?`);
  const calls = (r: UsageRow) => (r.estimated ? `${n(r.calls)} (${n(r.estimated)} est.)` : n(r.calls));
  const line = (r: UsageRow) => [r.key, calls(r), n(r.input), n(r.output), n(r.cacheRead), n(r.cacheWrite), n(r.totalTokens), cost(r)];
  const table = [head, ...summary.rows.map(line), line(summary.total)];
  const widths = head.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  const text = table.map((row) => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")).join("\n");
  return summary.total.estimated ? `${text}\nest.: answers stopped mid-stream, whose usage the provider never reported, counted at mom's estimate` : text;
}
