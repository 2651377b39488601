import { Bus, type RangeStart, readRange } from "@mom/bus";
import { type ChannelRef, type ChannelSubjectKind, qualifiedChannelId, type StreamKey } from "@mom/contracts";
import { WorkspaceLayout } from "@mom/store";
import { existsSync } from "node:fs";
import { createLogger, loadConfig } from "@mom/config";
import ms from "ms";
import { type BusEntry, entryJson, formatEntry, interleave, toEntry } from "./bus-view.js";
import { channelArg } from "./channel-arg.js";
import { CommandError } from "./command-error.js";
import { natsTargetFor } from "./nats-target.js";

export interface ReplayOptions {
  since?: string;
  until?: string;
  fromSeq?: string;
  json?: boolean;
  redrive?: boolean;
  model?: string;
  workspace?: string;
  data: string;
}

/** `2h`, `90s`, `7d` back from now, or an ISO time. */
export function parseWhen(flag: string, value: string, now = Date.now()): Date {
  const back = /^\d+(\.\d+)?\s*[a-z]+$/i.test(value) ? ms(value as ms.StringValue) : undefined;
  const at = back !== undefined && Number.isFinite(back) ? new Date(now - back) : new Date(value);
  if (Number.isNaN(at.getTime())) throw new CommandError(`${flag}: expected a duration back from now (90s, 30m, 2h, 7d) or an ISO time, got ${JSON.stringify(value)}`);
  return at;
}

/** Messages of a window that the stream no longer holds: its limits removed them. */
export interface AgedOut {
  stream: string;
  /** The oldest message the stream still holds. */
  firstSeq: number;
  firstTime: string;
  maxAge: string;
  /** The stream's byte limit, when it has one (old messages are dropped to stay under it too). */
  maxBytes?: number;
}

export interface ChannelWindow {
  entries: BusEntry[];
  agedOut: AgedOut[];
}

const KINDS: Array<[ChannelSubjectKind, StreamKey]> = [
  ["in", "IN"],
  ["out", "OUT"],
  ["ctl", "CTL"],
  ["receipts", "RECEIPTS"],
];

/**
 * Everything a channel's subjects hold in a window, from every stream, interleaved by the time
 * it was stored, plus the dead letters rejected from those subjects. Ordered consumers only.
 */
export async function readChannelWindow(bus: Bus, ref: ChannelRef, w: { since?: Date; until?: Date; fromSeq?: number }): Promise<ChannelWindow> {
  const s = bus.subjects;
  const lists: BusEntry[][] = [];
  const agedOut: AgedOut[] = [];
  let since = w.since;
  const subjectsOfChannel = new Set(KINDS.map(([kind]) => s.channel(kind, ref)));
  for (const [kind, key] of [...KINDS, ["dlq", "DLQ"] as const]) {
    const stream = s.stream(key);
    const info = await bus.streamInfo(key);
    if (!info) continue; // nothing was ever sent
    const start: RangeStart = key === "IN" && w.fromSeq !== undefined ? { seq: w.fromSeq } : since ? { time: since } : w.fromSeq !== undefined ? "new" : "first";
    const { first_seq: firstSeq, first_ts: firstTs, last_seq: lastSeq } = info.state;
    const wantedBefore = typeof start === "object" && ("seq" in start ? start.seq < firstSeq : start.time.getTime() < Date.parse(firstTs));
    // Messages 1..firstSeq-1 existed once; a window that reaches back before firstSeq lost some of them.
    if (firstSeq > 1 && lastSeq > 0 && (start === "first" || wantedBefore) && kind !== "dlq") {
      const maxBytes = info.config.max_bytes > 0 ? info.config.max_bytes : undefined;
      agedOut.push({ stream, firstSeq, firstTime: firstTs, maxAge: info.config.max_age ? ms(Math.round(info.config.max_age / 1e6), { long: true }) : "no age limit", ...(maxBytes && { maxBytes }) });
    }
    const filter = kind === "dlq" ? s.wildcard("dlq") : s.channel(kind, ref);
    const raw = await readRange(bus, stream, filter, start, w.until);
    let entries = raw.map((m) => toEntry(m, s));
    if (kind === "dlq") entries = entries.filter((e) => "data" in e && subjectsOfChannel.has((e.data as { subject: string }).subject));
    // --from-seq names an inbound message: the other streams start where it was stored.
    if (key === "IN" && w.fromSeq !== undefined && !since) since = entries[0] ? new Date(entries[0].time) : undefined;
    lists.push(entries);
  }
  return { entries: interleave(lists), agedOut };
}

/** The channels the bus's inbound stream holds messages of, and those the workspace has a directory for. */
export async function knownChannels(bus: Bus, workspaceDir: string): Promise<string[]> {
  const found = new Set<string>();
  const info = await bus.streamInfo("IN", { subjectsFilter: bus.subjects.wildcard("in") });
  for (const subject of Object.keys(info?.state.subjects ?? {})) {
    const ref = bus.subjects.parse(subject);
    if (ref) found.add(qualifiedChannelId(ref));
  }
  if (existsSync(workspaceDir)) for (const ref of new WorkspaceLayout(workspaceDir).listChannels()) found.add(qualifiedChannelId(ref));
  return [...found].sort();
}

function agedOutLine(a: AgedOut): string {
  const keeps = a.maxBytes ? `${a.maxAge}, at most ${a.maxBytes.toLocaleString("en-US")} bytes` : a.maxAge;
  return `(older messages of ${a.stream} have aged out of retention: it keeps ${keeps}; its oldest is #${a.firstSeq} from ${a.firstTime})`;
}

export async function replayCommand(qualified: string, o: ReplayOptions, print: (line: string) => void): Promise<number> {
  const ref = channelArg(qualified);
  const since = o.since ? parseWhen("--since", o.since) : undefined;
  const until = o.until ? parseWhen("--until", o.until) : undefined;
  let fromSeq: number | undefined;
  if (o.fromSeq !== undefined) {
    fromSeq = Number(o.fromSeq);
    if (!Number.isInteger(fromSeq) || fromSeq < 1) throw new CommandError(`--from-seq: expected a stream sequence (1, 2, …), got ${JSON.stringify(o.fromSeq)}`);
  }
  if (!o.redrive && (o.model || o.workspace)) throw new CommandError("--model and --workspace go with --redrive");
  const loaded = loadConfig(o.data);
  const target = await natsTargetFor(loaded);
  try {
    const bus = await Bus.connect({ url: target.url, name: "mom-replay", namespace: loaded.config.nats.namespace, logger: createLogger("mom-replay", { level: "silent" }) });
    try {
      const window = await readChannelWindow(bus, ref, { since, until, fromSeq });
      if (window.entries.length === 0) {
        // A typo (cli/locl) is not an empty channel: say which channels there are.
        const known = await knownChannels(bus, loaded.paths.workspaceDir);
        if (!known.includes(qualified)) {
          const list = known.length ? `channels: ${known.slice(0, 30).join(", ")}${known.length > 30 ? `, … (${known.length} in all)` : ""}` : "no channel has any traffic yet";
          throw new CommandError(`no channel ${qualified} on the bus or in ${loaded.paths.workspaceDir}; ${list}`);
        }
      }
      // The agent and its model SDKs load only for a redrive.
      if (o.redrive) return await (await import("./redrive.js")).redrive(loaded, ref, window.entries, { model: o.model, workspace: o.workspace, json: o.json }, print);
      printWindow(qualified, window, { since, until, fromSeq }, !!o.json, print);
      return 0;
    } finally {
      await bus.drain().catch(() => {});
    }
  } finally {
    await target.close();
  }
}

function printWindow(qualified: string, w: ChannelWindow, range: { since?: Date; until?: Date; fromSeq?: number }, json: boolean, print: (line: string) => void): void {
  if (json) {
    for (const a of w.agedOut) print(JSON.stringify({ kind: "aged_out", ...a }));
    for (const e of w.entries) print(entryJson(e));
    return;
  }
  const from = range.fromSeq !== undefined ? `MOM_IN #${range.fromSeq}` : range.since ? range.since.toISOString() : "the oldest message kept";
  print(`replay of ${qualified} from ${from} to ${range.until ? range.until.toISOString() : "now"} (${w.entries.length} messages)`);
  for (const a of w.agedOut) print(agedOutLine(a));
  let day = "";
  for (const e of w.entries) {
    const line = formatEntry(e);
    if (line === undefined) continue;
    if (e.time.slice(0, 10) !== day) print(`— ${(day = e.time.slice(0, 10))} (UTC)`);
    print(line);
  }
}


