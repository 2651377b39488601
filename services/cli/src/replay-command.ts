import { type AgedOut, Bus, type ChannelWindow, readChannelWindow } from "@mom/bus";
import { qualifiedChannelId } from "@mom/contracts";
import { WorkspaceLayout } from "@mom/store";
import { existsSync } from "node:fs";
import { createLogger, loadConfig } from "@mom/config";
import ms from "ms";
import { entryJson, formatEntry } from "./bus-view.js";

export { type AgedOut, type ChannelWindow, readChannelWindow } from "@mom/bus";
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


