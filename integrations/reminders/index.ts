import { type ChannelRef, parseQualifiedChannelId } from "@mom/contracts";
import { isTimeZone, nextFireTime, parseEventFile, parseIsoWithOffset, type ScheduledEvent } from "@mom/events";
import type { CustomToolApi, MomTool, ToolCallContext } from "@mom/tools";
import Type from "typebox";
import { ChannelEventsDir } from "./src/channel-events.js";
import { checkNewId, existingFile, fileOf, idOf, newId } from "./src/event-ids.js";
import { planEvent } from "./src/event-input.js";
import { operatorEventsFor, schedulerView } from "./src/queue-limit.js";
import { remindersSettings } from "./src/settings.js";
import { describeWhen, offsetZone } from "./src/when.js";

// Reminders on mom's own scheduler: the tools write, list and remove the current channel's event
// files (channels/<adapter>/<channel>/events/*.json), which the scheduler fires into that channel.
// A reminder exists when create's call succeeded: the file was checked by the scheduler's own
// parser (@mom/events) and is in place. See README.md.

const CreateParams = Type.Object({
  text: Type.String({
    description: "What you are told when it fires, written as a note to yourself, e.g. \"Remind @ana to send the report\"",
  }),
  at: Type.Optional(
    Type.String({
      description:
        "One-shot: when, as a local date-time \"2026-12-15T09:00\" (in timezone) or ISO 8601 with an offset \"2026-12-15T09:00:00+01:00\"; must be in the future",
    }),
  ),
  schedule: Type.Optional(Type.String({ description: "Periodic instead: a cron expression (minute hour day-of-month month day-of-week), e.g. \"0 9 * * 1-5\"" })),
  timezone: Type.Optional(
    Type.String({ description: "IANA time zone of at or schedule, e.g. \"Europe/Vienna\"; default: tools.settings.reminders.timezone, else the host's" }),
  ),
  id: Type.Optional(Type.String({ description: "A name for it (letters, digits, - _ .); default: made from the text. Must not exist yet" })),
});

const ListParams = Type.Object({});

const CancelParams = Type.Object({
  id: Type.String({ description: "The event's id, as reminders.event.list or create showed it" }),
});

/** Ids tried when a made-up one happens to exist already. */
const NEW_ID_ATTEMPTS = 5;

export default function reminders(api: CustomToolApi): MomTool[] {
  const create: MomTool<typeof CreateParams> = {
    id: "reminders.event.create",
    description:
      "Schedule a reminder (or any later message to yourself) in this channel: one-shot (at) or periodic (cron schedule). " +
      "It is checked exactly as the scheduler checks event files; the result gives its id and next fire time. " +
      "When it fires you get a message starting with [EVENT:<id>.json:...]. Use this instead of writing files into events/.",
    risk: "write",
    parameters: CreateParams,
    timeoutMs: 30_000,
    async execute(args, ctx) {
      const owner = ownerOf(ctx);
      const nowMs = Date.now();
      const { timezone } = remindersSettings(api);
      const given = args.id === undefined ? undefined : checkNewId(args.id);
      // Checked under its future name first: every problem with the input comes before any file.
      let id = given ?? newId(args.text);
      const plan = planEvent(args, owner, fileOf(id), { nowMs, defaultTimezone: timezone });
      const dir = new ChannelEventsDir(ctx.cwd);

      const view = schedulerView(api.dataDir);
      const queued = (await ownEvents(dir, owner)).length + (await operatorEventsFor(view, owner));
      if (queued >= view.maxQueuedPerChannel) {
        throw new Error(
          `this channel already has ${queued} scheduled events, the most the scheduler takes (scheduler.maxQueuedPerChannel = ${view.maxQueuedPerChannel}); cancel one first (reminders.event.list shows them)`,
        );
      }
      for (let attempt = 1; !(await dir.create(fileOf(id), plan.json)); attempt++) {
        if (given) throw new Error(`an event with id "${id}" already exists in this channel; choose another id, or cancel that one first`);
        if (attempt >= NEW_ID_ATTEMPTS) throw new Error(`could not find a free id for the event in this channel after ${attempt} tries; give one with "id"`);
        id = newId(args.text);
      }

      const { event, nextMs, zone } = plan;
      const when = describeWhen(nextMs, nowMs, zone);
      const what = event.type === "one-shot" ? `one-shot reminder at ${event.at}` : `periodic reminder "${event.schedule}" (${event.timezone})`;
      const marker = `[EVENT:${fileOf(id)}:${event.type}:${event.type === "one-shot" ? event.at : event.schedule}]`;
      return {
        text: [
          `Scheduled in this channel: ${what}, id "${id}" (events/${fileOf(id)}).`,
          `${event.type === "one-shot" ? "Fires" : "Next fires"}: ${when} = ${new Date(nextMs).toISOString()}.`,
          `When it fires you get a message starting with ${marker}. To cancel it: reminders.event.cancel {"id": "${id}"}.`,
        ].join("\n"),
        details: {
          id,
          file: `events/${fileOf(id)}`,
          channel: ctx.channel,
          type: event.type,
          ...(event.type === "one-shot" ? { at: event.at } : { schedule: event.schedule }),
          timezone: zone,
          next: new Date(nextMs).toISOString(),
          nextHuman: when,
        },
      };
    },
  };

  const list: MomTool<typeof ListParams> = {
    id: "reminders.event.list",
    description: "List this channel's scheduled events (reminders): id, type, text and next fire time, and event files the scheduler cannot use.",
    risk: "read",
    parameters: ListParams,
    timeoutMs: 30_000,
    async execute(_args, ctx) {
      const owner = ownerOf(ctx);
      const nowMs = Date.now();
      const { timezone } = remindersSettings(api);
      const dir = new ChannelEventsDir(ctx.cwd);
      const { entries, truncated } = await dir.list();
      const events: ListedEvent[] = [];
      const problems: Array<{ id: string; problem: string }> = [];
      for (const e of entries) {
        if ("refused" in e) {
          problems.push({ id: idOf(e.name), problem: e.refused });
          continue;
        }
        const parsed = parseEventFile(e.name, e.text, { adapters: new Set([owner.adapter]) }, owner);
        if (!parsed.ok) problems.push({ id: idOf(e.name), problem: `${parsed.reason} (the scheduler moves it to events/invalid/)` });
        else events.push(listed(parsed.event, e.text, nowMs, timezone));
      }
      events.sort((a, b) => (a.next ?? "~").localeCompare(b.next ?? "~") || a.id.localeCompare(b.id));
      const lines = events.length ? events.map(formatListed) : ["No events are scheduled in this channel."];
      if (problems.length) lines.push("", "Not events (the scheduler does not fire these):", ...problems.map((p) => `- ${JSON.stringify(p.id)}: ${p.problem}`));
      if (truncated) lines.push("", "(events/ has more entries than are read; the list is incomplete)");
      return { text: lines.join("\n"), details: { channel: ctx.channel, events, problems, ...(truncated && { truncated }) } };
    },
  };

  const cancel: MomTool<typeof CancelParams> = {
    id: "reminders.event.cancel",
    description: "Cancel one of this channel's scheduled events by id: its file is removed and it does not fire (again). The result holds what it was, to schedule it anew if needed.",
    // Destructive: it deletes, a passed one-shot cannot be made again, and in a shared channel the
    // reminder may be someone else's (README.md "Risks").
    risk: "destructive",
    parameters: CancelParams,
    timeoutMs: 30_000,
    async execute(args, ctx) {
      const owner = ownerOf(ctx);
      const file = existingFile(args.id);
      const id = idOf(file);
      const text = await new ChannelEventsDir(ctx.cwd).remove(file);
      if (text === undefined) throw new Error(`no event "${id}" in this channel; reminders.event.list shows its events`);
      const parsed = parseEventFile(file, text, { adapters: new Set([owner.adapter]) }, owner);
      const was = parsed.ok
        ? parsed.event.type === "one-shot"
          ? `the one-shot reminder at ${parsed.event.at}; it will not fire`
          : parsed.event.type === "periodic"
            ? `the periodic reminder "${parsed.event.schedule}" (${parsed.event.timezone}); it will not fire again`
            : "an immediate event"
        : `a file the scheduler could not use (${parsed.reason})`;
      return {
        text: `Cancelled "${id}" (events/${file}): ${was}.\nIt held:\n${text.trim()}`,
        details: { id, file: `events/${file}`, channel: ctx.channel, removed: text },
      };
    },
  };

  return [create, list, cancel];
}

interface ListedEvent {
  id: string;
  type: ScheduledEvent["type"];
  text: string;
  /** The `at` or the cron schedule and its zone, as written. */
  when: string;
  /** ISO time of the next firing, when there is one. */
  next?: string;
  nextHuman?: string;
}

function listed(event: ScheduledEvent, raw: string, nowMs: number, defaultZone: string): ListedEvent {
  const nextMs = nextFireTime(event, nowMs);
  const zone = event.type === "periodic" ? event.timezone : event.type === "one-shot" ? zoneOfOneShot(event.at, raw, defaultZone) : defaultZone;
  return {
    id: idOf(event.file),
    type: event.type,
    text: event.text,
    when: event.type === "one-shot" ? event.at : event.type === "periodic" ? `${event.schedule} (${event.timezone})` : "immediate",
    ...(nextMs !== undefined && { next: new Date(nextMs).toISOString(), nextHuman: describeWhen(nextMs, nowMs, zone) }),
  };
}

/** A one-shot is shown in the zone it was made in (create records it), else in its `at`'s offset. */
function zoneOfOneShot(at: string, raw: string, fallback: string): string {
  const recorded = (JSON.parse(raw) as { timezone?: unknown }).timezone;
  if (typeof recorded === "string" && isTimeZone(recorded)) return recorded;
  return (parseIsoWithOffset(at) && offsetZone(at)) || fallback;
}

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

function formatListed(e: ListedEvent): string {
  const next = e.nextHuman ? `next ${e.nextHuman} = ${e.next}` : e.type === "immediate" ? "fires at once" : "no further firing";
  return `- ${e.id} (${e.type} ${e.when}): ${next}\n  text: ${JSON.stringify(clip(e.text, 300))}`;
}

/** The valid events in the channel's own events/: what the scheduler counts against its limit. */
async function ownEvents(dir: ChannelEventsDir, owner: ChannelRef): Promise<ScheduledEvent[]> {
  const { entries } = await dir.list();
  const out: ScheduledEvent[] = [];
  for (const e of entries) {
    if (!("text" in e)) continue;
    const parsed = parseEventFile(e.name, e.text, { adapters: new Set([owner.adapter]) }, owner);
    if (parsed.ok) out.push(parsed.event);
  }
  return out;
}

function ownerOf(ctx: ToolCallContext): ChannelRef {
  return parseQualifiedChannelId(ctx.channel);
}
