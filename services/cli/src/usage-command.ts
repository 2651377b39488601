import { CommandError } from "./command-error.js";
import { Bus } from "@mom/bus";
import { createLogger, loadConfig } from "@mom/config";
import { formatUsageTable, monthStart, openLedgerStream, summarizeUsage, type UsageGrouping, validRecords } from "@mom/usage";
import { Command } from "commander";
import { registerUsage } from "./command-spec.js";
import { dataDirOf, existingDataDir, strict } from "./data-dir.js";
import { natsTargetFor } from "./nats-target.js";

function parseSince(value: string | undefined, now = new Date()): Date {
  if (!value) return monthStart(now);
  const at = new Date(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value);
  if (Number.isNaN(at.getTime())) throw new CommandError(`--since: expected YYYY-MM-DD or an ISO time, got ${JSON.stringify(value)}`);
  return at;
}

export interface UsageOptions {
  by?: string;
  since?: string;
  data?: string;
}

/** `mom usage` with its arguments as typed, e.g. ["--by", "model", "--data", "DIR"]. */
export async function usageReport(args: string[]): Promise<string> {
  let text = "";
  const root = strict(new Command("mom"), (t) => void process.stderr.write(t));
  registerUsage(root, (t) => (text = t));
  await root.parseAsync(["usage", ...args], { from: "user" });
  return text;
}

/** `mom usage`: reads the ledger stream from NATS and prints totals. */
export async function usageTotals(o: UsageOptions): Promise<string> {
  const by = (o.by ?? "channel") as UsageGrouping;
  if (!["channel", "adapter", "model"].includes(by)) throw new CommandError(`--by: expected channel, adapter or model, got ${JSON.stringify(o.by)}`);
  const since = parseSince(o.since);
  const loaded = loadConfig(existingDataDir(dataDirOf(o)));
  // The NATS of this data dir's services: the named one, the running `mom up`'s, or its store.
  const nats = await natsTargetFor(loaded);
  let bus: Bus;
  try {
    bus = await Bus.connect({ url: nats.url, name: "mom-usage", namespace: loaded.config.nats.namespace, logger: createLogger("mom-usage", { level: "silent" }) });
  } catch (err) {
    await nats.close();
    throw err;
  }
  try {
    const ledger = await openLedgerStream(bus, loaded.config.nats.streams.replicas);
    const { records, invalid } = validRecords(await ledger.readSince(since));
    const head = `usage since ${since.toISOString()} by ${by}`;
    const body = records.length ? formatUsageTable(summarizeUsage(records, by), by) : "no model calls recorded";
    const skipped = invalid.length ? `\n(${invalid.length} ledger record(s) skipped as invalid, first at seq ${invalid[0]!.seq}: ${invalid[0]!.reason})` : "";
    return `${head}\n${body}${skipped}`;
  } finally {
    await bus.drain();
    await nats.close();
  }
}
