import { type ChannelRef, parseQualifiedChannelId, qualifiedChannelId } from "@mom/contracts";
import { CronSchedule, isTimeZone, parseIsoWithOffset } from "./schedule.js";

// The format of workspace/events/*.json, as the system prompt describes it to the agent:
//   {"type": "immediate", "channelId": "<adapter>/<channel>", "text": "..."}
//   {"type": "one-shot",  "channelId": ..., "text": ..., "at": "2026-12-15T09:00:00+01:00"}
//   {"type": "periodic",  "channelId": ..., "text": ..., "schedule": "0 9 * * 1-5", "timezone": "Europe/Vienna"}
// Other keys are ignored (the agent may keep a note in the file). This is a workspace file format,
// not a bus payload, so it lives here and not in @mom/contracts: the scheduler, which fires these
// files, and the reminders integration, which writes them, judge a file with this one parser.
//
// Where a file lies decides what it may target: the operator's workspace/events/ any channel, a
// channel's own channels/<adapter>/<channel>/events/ only that channel (its "owner"; channelId may
// then be left out). A file there that names another channel is refused and reported to the owner.

export type EventType = "immediate" | "one-shot" | "periodic";
export const EVENT_TYPES: readonly EventType[] = ["immediate", "one-shot", "periodic"];

interface EventBase {
  /** File name inside events/, e.g. "standup.json". */
  file: string;
  /** As written: "<adapter>/<channelId>". */
  channelId: string;
  ref: ChannelRef;
  text: string;
}
export interface ImmediateEvent extends EventBase {
  type: "immediate";
}
export interface OneShotEvent extends EventBase {
  type: "one-shot";
  /** `at` as written in the file (with its offset); shown to the agent. */
  at: string;
  atMs: number;
}
export interface PeriodicEvent extends EventBase {
  type: "periodic";
  schedule: string;
  timezone: string;
  cron: CronSchedule;
}
export type ScheduledEvent = ImmediateEvent | OneShotEvent | PeriodicEvent;

/** A file mom cannot use. `ref` is set when the target channel is known, so it can be told there. */
export interface EventFileProblem {
  reason: string;
  ref?: ChannelRef;
}

export type ParsedEventFile = { ok: true; event: ScheduledEvent } | ({ ok: false } & EventFileProblem);

export interface EventFileContext {
  /**
   * Adapter names from config.json. Any channel of a configured adapter is a valid target, seen
   * before or not: its ingress can post there, and the runner creates the channel's directory.
   */
  adapters: ReadonlySet<string>;
}

/**
 * Event files are `*.json` in events/ itself; dot files (editor and atomic-write temp files) are
 * not. A name with control characters (a newline) is an event file too, but an invalid one: it is
 * moved aside under a printable name and reported, never ignored.
 */
export function isEventFileName(name: string): boolean {
  return name.endsWith(".json") && !name.startsWith(".") && name.length > ".json".length;
}

const CONTROL_CHARS = /[\u0000-\u001f\u007f]/g;
const HAS_CONTROL_CHAR = /[\u0000-\u001f\u007f]/;

/** The name with its control characters as `\xNN`: safe to print, move to and show in a chat. */
export function printableFileName(name: string): string {
  return name.replace(CONTROL_CHARS, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

/** Largest event file read; anything bigger is not an event someone meant to write. */
export const MAX_EVENT_FILE_BYTES = 64 * 1024;

const show = (v: unknown) => (typeof v === "string" ? JSON.stringify(v) : v === undefined ? "nothing" : JSON.stringify(v) ?? String(v));

/**
 * Validates one event file's name and text. Pure apart from the context's lookups. `owner`: the
 * channel whose events directory holds the file (undefined: the operator's events/). Such a file
 * can only target its owner, and every problem with it is reported to its owner, never to the
 * channel it names.
 */
export function parseEventFile(file: string, text: string, ctx: EventFileContext, owner?: ChannelRef): ParsedEventFile {
  const parsed = parseEventText(file, text, ctx, owner);
  if (owner) {
    if (!parsed.ok) return { ok: false, reason: parsed.reason, ref: owner };
    if (!sameChannel(parsed.event.ref, owner)) {
      const mine = qualifiedChannelId(owner);
      return {
        ok: false,
        reason: `"channelId" is ${show(parsed.event.channelId)}, but this file is in the events directory of ${mine}, and a channel's events can only target that channel (write "channelId": ${show(mine)} or leave it out)`,
        ref: owner,
      };
    }
  }
  if (!HAS_CONTROL_CHAR.test(file)) return parsed;
  const ref = parsed.ok ? parsed.event.ref : parsed.ref;
  return { ok: false, reason: `the file name ${JSON.stringify(file)} has control characters (a newline, a tab…); name event files with printable characters`, ...(ref && { ref }) };
}

const sameChannel = (a: ChannelRef, b: ChannelRef) => a.adapter === b.adapter && a.channelId === b.channelId;

function parseEventText(file: string, text: string, ctx: EventFileContext, owner?: ChannelRef): ParsedEventFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (err) {
    return { ok: false, reason: `invalid JSON: ${(err as Error).message}` };
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return { ok: false, reason: `expected a JSON object, got ${show(raw)}` };
  const o = raw as Record<string, unknown>;

  // The channel first: every later problem can then be reported in it.
  if (owner && o.channelId === undefined) o.channelId = qualifiedChannelId(owner);
  if (typeof o.channelId !== "string" || o.channelId === "") {
    return { ok: false, reason: `"channelId" must be "<adapter>/<channelId>", got ${show(o.channelId)}` };
  }
  let ref: ChannelRef;
  try {
    ref = parseQualifiedChannelId(o.channelId);
  } catch {
    return { ok: false, reason: `"channelId" must be "<adapter>/<channelId>", got ${show(o.channelId)}` };
  }
  if (!ctx.adapters.has(ref.adapter)) {
    const known = [...ctx.adapters].join(", ") || "none";
    return { ok: false, reason: `unknown adapter "${ref.adapter}" in channelId ${show(o.channelId)} (adapters in config.json: ${known})` };
  }
  const fail = (reason: string): ParsedEventFile => ({ ok: false, reason, ref });

  if (o.type === undefined) return fail(`missing "type" (expected "immediate", "one-shot" or "periodic")`);
  if (typeof o.type !== "string" || !EVENT_TYPES.includes(o.type as EventType)) {
    return fail(`unknown type ${show(o.type)} (expected "immediate", "one-shot" or "periodic")`);
  }
  if (typeof o.text !== "string" || o.text.trim() === "") return fail(`"text" must be a non-empty string, got ${show(o.text)}`);
  const base = { file, channelId: o.channelId, ref, text: o.text };

  switch (o.type as EventType) {
    case "immediate":
      return { ok: true, event: { ...base, type: "immediate" } };
    case "one-shot": {
      if (typeof o.at !== "string") return fail(`bad date: "at" must be an ISO 8601 date-time with an offset like "2026-12-15T09:00:00+01:00", got ${show(o.at)}`);
      const at = parseIsoWithOffset(o.at);
      if (!at) return fail(`bad date: "at" is ${show(o.at)}, expected an ISO 8601 date-time with an offset like "2026-12-15T09:00:00+01:00"`);
      return { ok: true, event: { ...base, type: "one-shot", at: o.at, atMs: at.getTime() } };
    }
    case "periodic": {
      if (typeof o.schedule !== "string" || o.schedule.trim() === "") {
        return fail(`bad cron: "schedule" must be a cron expression like "0 9 * * 1-5", got ${show(o.schedule)}`);
      }
      if (typeof o.timezone !== "string") return fail(`unknown time zone: "timezone" must be an IANA name like "Europe/Vienna", got ${show(o.timezone)}`);
      if (!isTimeZone(o.timezone)) return fail(`unknown time zone ${show(o.timezone)} (expected an IANA name like "Europe/Vienna" or "UTC")`);
      let cron: CronSchedule;
      try {
        cron = new CronSchedule(o.schedule.trim(), o.timezone);
      } catch (err) {
        return fail(`bad cron ${show(o.schedule)}: ${(err as Error).message}`);
      }
      if (!cron.nextAfter(new Date())) return fail(`bad cron ${show(o.schedule)}: it never fires`);
      return { ok: true, event: { ...base, type: "periodic", schedule: o.schedule.trim(), timezone: o.timezone, cron } };
    }
  }
}
