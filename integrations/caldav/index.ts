// caldav.event.list / create / move / delete: a calendar over CalDAV (integrations/caldav/README.md).
// The operator enables it by pointing config.json tools.globalDir at integrations/ and setting
// tools.settings.caldav; the password is resolved from its reference at each call, on the host.
import { randomUUID } from "node:crypto";
import Type from "typebox";
import type { CustomToolApi, MomTool } from "@mom/tools";
import { checkUid, multiLine, oneLine } from "./checks.js";
import { type CalendarCache, type CalendarRef, DavSession, type StoredObject } from "./dav.js";
import { newEventIcs, type Occurrence, occurrencesIn, stampOf, StoredEvent, uidsOf } from "./ics.js";
import { type Resolved, resolveSettings } from "./settings.js";
import { parseWhen, showInstant, startOfDay, Temporal, type When, zoneId } from "./times.js";

/** At most this many events are listed; the rest are counted. */
const MAX_LISTED = 200;
const MAX_RANGE_DAYS = 366;
const TIMEOUT_MS = 60_000;

const TimeText = (description: string) => Type.String({ minLength: 1, maxLength: 40, description });
const Zone = Type.Optional(
  Type.String({ minLength: 1, maxLength: 64, description: "IANA time zone for times written without an offset, e.g. Europe/Vienna; default the configured one, else the calendar's, else UTC" }),
);

const ListParams = Type.Object({
  from: Type.Optional(TimeText("Start of the range: 2026-10-25 (midnight), 2026-10-25T09:00 (in timezone) or 2026-10-25T09:00+02:00; default now")),
  to: Type.Optional(TimeText("End of the range (exclusive), same forms; default 7 days after from; at most 366 days after from")),
  timezone: Zone,
});

const CreateParams = Type.Object({
  title: Type.String({ minLength: 1, maxLength: 500, description: "The event's title (one line)" }),
  start: TimeText("2026-10-25T09:30 (wall-clock time in timezone), 2026-10-25T09:30+02:00, or 2026-10-25 for an all-day event"),
  end: Type.Optional(TimeText("Same form as start and after it; for an all-day event the day after its last day. Give end or durationMinutes; default 60 minutes (one day for all-day)")),
  durationMinutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 525_600, description: "Length in minutes of real time, instead of end" })),
  timezone: Zone,
  description: Type.Optional(Type.String({ maxLength: 10_000, description: "Notes (may have several lines)" })),
  location: Type.Optional(Type.String({ maxLength: 500, description: "Where (one line)" })),
});

const Uid = Type.String({ minLength: 1, maxLength: 1000, description: "The event's uid, exactly as caldav.event.list shows it" });

const MoveParams = Type.Object({
  uid: Uid,
  start: TimeText("New start: 2026-10-25T09:30 (wall-clock time in timezone), 2026-10-25T09:30+02:00, or a date for an all-day event"),
  end: Type.Optional(TimeText("New end, same form as start; default: the event keeps its length")),
  durationMinutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 525_600, description: "New length in minutes, instead of end" })),
  timezone: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: "IANA time zone for start/end written without an offset; default the event's own zone" }),
  ),
});

const DeleteParams = Type.Object({ uid: Uid });

type Open = (signal: AbortSignal) => { s: Resolved; dav: DavSession };

const instantOf = (w: When, tz: string) => (w.allDay ? startOfDay(w.date, tz) : w.instant);
const show = (w: When, tz: string) => (w.allDay ? w.date.toString() : showInstant(w.instant, tz));
const q = (s: string) => JSON.stringify(s);

function zoneFor(given: string | undefined, s: Resolved, cal: CalendarRef, own?: string): string {
  if (given !== undefined) return zoneId(given, "timezone");
  return own ?? s.timezone ?? cal.timezone ?? "UTC";
}

/** The end of an event starting at `start`: from end, from durationMinutes, or a default length. */
function endOf(start: When, a: { end?: string; durationMinutes?: number }, tz: string, keep?: { days?: number; length?: Temporal.Duration }): When {
  if (a.end !== undefined && a.durationMinutes !== undefined) throw new Error("give end or durationMinutes, not both");
  if (start.allDay) {
    if (a.durationMinutes !== undefined) throw new Error("durationMinutes: start is a date (an all-day event), so give end as a date (the day after its last day) instead");
    if (a.end === undefined) return { allDay: true, date: start.date.add({ days: keep?.days ?? 1 }) };
    const end = parseWhen(a.end, tz, "end");
    if (!end.allDay) throw new Error("end: start is a date (an all-day event), so end must be a date too: the day after its last day");
    if (Temporal.PlainDate.compare(end.date, start.date) <= 0) {
      throw new Error(`end: ${end.date} is not after start ${start.date}; for an all-day event end is the day after its last day (${start.date.add({ days: 1 })} for one day)`);
    }
    return end;
  }
  if (a.durationMinutes !== undefined) return { allDay: false, instant: start.instant.add({ minutes: a.durationMinutes }) };
  if (a.end === undefined) return { allDay: false, instant: start.instant.add(keep?.length ?? { minutes: 60 }) };
  const end = parseWhen(a.end, tz, "end");
  if (end.allDay) throw new Error(`end: start has a time, so end needs one too, e.g. ${a.end}T10:00`);
  if (Temporal.Instant.compare(end.instant, start.instant) <= 0) {
    throw new Error(`end: ${showInstant(end.instant, tz)} is not after start ${showInstant(start.instant, tz)}: end must be after start`);
  }
  return end;
}

/** The one stored object holding the event `uid` in the configured calendar. */
async function findEvent(dav: DavSession, cal: CalendarRef, uid: string): Promise<{ obj: StoredObject; event: StoredEvent }> {
  const candidates = await dav.objectsWithUid(cal, uid);
  const matches = candidates.filter((o) => {
    try {
      return uidsOf(o.data).includes(uid);
    } catch {
      return false;
    }
  });
  if (!matches.length) throw new Error(`uid: no event with uid ${q(uid)} in calendar ${q(cal.name)}; caldav.event.list shows the events and their uids`);
  if (matches.length > 1) throw new Error(`uid: ${matches.length} stored objects have uid ${q(uid)} in calendar ${q(cal.name)}; fix that in a calendar app`);
  const obj = matches[0]!;
  if (uidsOf(obj.data).length > 1) throw new Error(`uid: the object holding ${q(uid)} holds other events too; change it in a calendar app`);
  return { obj, event: new StoredEvent(obj.data, uid) };
}

function listTool(open: Open): MomTool<typeof ListParams> {
  return {
    id: "caldav.event.list",
    risk: "read",
    description:
      "List the events of the configured calendar (CalDAV) in a time range, recurring ones expanded: each with its uid (for caldav.event.move/delete), title, start and end (ISO 8601 with the UTC offset of the timezone shown), location.",
    parameters: ListParams,
    timeoutMs: TIMEOUT_MS,
    async execute(args, ctx) {
      const { s, dav } = open(ctx.signal);
      const cal = await dav.calendar();
      const tz = zoneFor(args.timezone, s, cal);
      const from = args.from !== undefined ? instantOf(parseWhen(args.from, tz, "from"), tz) : Temporal.Now.instant();
      const to = args.to !== undefined ? instantOf(parseWhen(args.to, tz, "to"), tz) : from.add({ hours: 24 * 7 });
      if (Temporal.Instant.compare(to, from) <= 0) throw new Error(`to: ${showInstant(to, tz)} is not after from ${showInstant(from, tz)}`);
      if (Temporal.Instant.compare(to, from.add({ hours: 24 * MAX_RANGE_DAYS })) > 0) throw new Error(`to: the range may be at most ${MAX_RANGE_DAYS} days; list a shorter one`);
      // Widened by the largest UTC offsets: a server reads all-day and floating times as UTC, which
      // can put them up to 14 hours off the range here; the exact check is occurrencesIn's.
      const objects = await dav.objectsBetween(cal, new Date(from.subtract({ hours: 14 }).epochMilliseconds), new Date(to.add({ hours: 14 }).epochMilliseconds));
      const events: Occurrence[] = [];
      let unreadable = 0;
      let capped = false;
      for (const o of objects) {
        try {
          const found = occurrencesIn(o.data, from, to, tz);
          events.push(...found.occurrences);
          capped ||= found.capped;
        } catch {
          unreadable++;
        }
      }
      events.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.title.localeCompare(b.title)));
      const shown = events.slice(0, MAX_LISTED);
      const range = `from ${showInstant(from, tz)} to ${showInstant(to, tz)} (times in ${tz})`;
      const lines = shown.map(
        (e) =>
          `- ${q(e.title)} · ${e.start} → ${e.end}${e.allDay ? " (all day)" : ""}${e.recurring ? " (recurring)" : ""}${e.location ? ` · at ${q(e.location)}` : ""} · uid ${q(e.uid)}`,
      );
      const notes = [
        events.length > shown.length ? `(${events.length - shown.length} more not shown: list a shorter range)` : "",
        unreadable ? `(${unreadable} stored object(s) could not be read as iCalendar and are left out)` : "",
        capped ? "(a long-running series was expanded only partly)" : "",
      ].filter(Boolean);
      const head = events.length ? `Calendar ${q(cal.name)}: ${events.length} event(s) ${range}:` : `Calendar ${q(cal.name)} has no events ${range}.`;
      return {
        text: [head, ...lines, ...notes].join("\n"),
        details: { calendar: cal.name, timezone: tz, from: showInstant(from, tz), to: showInstant(to, tz), events: shown.map(({ at: _at, ...e }) => e), more: events.length - shown.length },
      };
    },
  };
}

function createTool(open: Open): MomTool<typeof CreateParams> {
  return {
    id: "caldav.event.create",
    risk: "write",
    description:
      "Create an event in the configured calendar (CalDAV): title, start, end or durationMinutes, optional timezone, description and location. A date without a time makes an all-day event. Returns the new event's uid.",
    parameters: CreateParams,
    timeoutMs: TIMEOUT_MS,
    async execute(args, ctx) {
      const title = oneLine(args.title, "title");
      const location = args.location !== undefined ? oneLine(args.location, "location") : undefined;
      const description = args.description !== undefined ? multiLine(args.description, "description") : undefined;
      const { s, dav } = open(ctx.signal);
      // The zone is checked before the server is asked anything.
      const given = args.timezone !== undefined ? zoneId(args.timezone, "timezone") : undefined;
      const cal = await dav.calendar();
      const tz = zoneFor(given, s, cal);
      const start = parseWhen(args.start, tz, "start");
      const end = endOf(start, args, tz);
      const uid = randomUUID();
      const ics = newEventIcs({ uid, title, start: stampOf(start, tz), end: stampOf(end, tz), description, location, now: new Date() });
      await dav.create(cal, `${uid}.ics`, ics);
      const when = `${show(start, tz)} → ${show(end, tz)}${start.allDay ? " (all day)" : ` (${tz})`}`;
      return {
        text: `Created ${q(title)} in calendar ${q(cal.name)}: ${when}. uid ${q(uid)}`,
        details: { uid, calendar: cal.name, title, start: show(start, tz), end: show(end, tz), allDay: start.allDay, timezone: tz },
      };
    },
  };
}

function moveTool(open: Open): MomTool<typeof MoveParams> {
  return {
    id: "caldav.event.move",
    risk: "write",
    description:
      "Move an event of the configured calendar (CalDAV) to a new start (and end, or durationMinutes; by default it keeps its length). Identify it by the uid caldav.event.list shows. Recurring events cannot be moved.",
    parameters: MoveParams,
    timeoutMs: TIMEOUT_MS,
    async execute(args, ctx) {
      const uid = checkUid(args.uid);
      const { s, dav } = open(ctx.signal);
      const given = args.timezone !== undefined ? zoneId(args.timezone, "timezone") : undefined;
      const cal = await dav.calendar();
      const { obj, event } = await findEvent(dav, cal, uid);
      if (event.unmovable) throw new Error(`uid ${q(uid)}: cannot move ${q(event.title)}: ${event.unmovable}; change it in a calendar app, or delete it and create a new one`);
      const tz = zoneFor(given, s, cal, event.zone);
      const before = event.times(tz);
      const start = parseWhen(args.start, tz, "start");
      if (start.allDay !== before.start.allDay) {
        throw new Error(
          before.start.allDay
            ? `start: ${q(event.title)} is an all-day event: give start as a date (e.g. 2026-10-25)`
            : `start: ${q(event.title)} has a time: give start with one (e.g. ${args.start}T09:00)`,
        );
      }
      const keep =
        before.start.allDay && before.end.allDay
          ? { days: before.start.date.until(before.end.date).days }
          : !before.start.allDay && !before.end.allDay
            ? { length: before.start.instant.until(before.end.instant) }
            : undefined;
      const end = endOf(start, args, tz, keep);
      const was = event.describe(tz);
      await dav.update(obj, event.retimed(stampOf(start, tz), stampOf(end, tz), new Date()));
      const now = `${show(start, tz)} → ${show(end, tz)}`;
      return {
        text: `Moved ${q(event.title)} (uid ${q(uid)}) in calendar ${q(cal.name)} from ${was} to ${now}${start.allDay ? "" : ` (${tz})`}.`,
        details: { uid, calendar: cal.name, title: event.title, start: show(start, tz), end: show(end, tz), was, timezone: tz },
      };
    },
  };
}

function deleteTool(open: Open): MomTool<typeof DeleteParams> {
  return {
    id: "caldav.event.delete",
    risk: "destructive",
    description:
      "Delete an event from the configured calendar (CalDAV), by the uid caldav.event.list shows. A recurring event is deleted with all its occurrences. This cannot be undone.",
    parameters: DeleteParams,
    timeoutMs: TIMEOUT_MS,
    async execute(args, ctx) {
      const uid = checkUid(args.uid);
      const { s, dav } = open(ctx.signal);
      const cal = await dav.calendar();
      const { obj, event } = await findEvent(dav, cal, uid);
      const tz = zoneFor(undefined, s, cal, event.zone);
      const was = event.describe(tz);
      await dav.remove(obj);
      return {
        text: `Deleted ${q(event.title)} (uid ${q(uid)}, ${was}${event.recurring ? ", with all its occurrences" : ""}) from calendar ${q(cal.name)}.`,
        details: { uid, calendar: cal.name, title: event.title, was, recurring: event.recurring },
      };
    },
  };
}

/** The integration's tools; they share one cache of discovered calendars. */
export default function caldavTools(api: CustomToolApi): MomTool[] {
  const cache: CalendarCache = new Map();
  const open: Open = (signal) => {
    const s = resolveSettings(api);
    return { s, dav: new DavSession(s, signal, cache) };
  };
  // A failed call may mean the calendar moved or the settings changed: find it afresh next time.
  const forgetOnError = <T extends MomTool>(tool: T): T => ({
    ...tool,
    execute: async (args: never, ctx) => {
      try {
        return await tool.execute(args, ctx);
      } catch (e) {
        cache.clear();
        throw e;
      }
    },
  });
  return [listTool(open), createTool(open), moveTool(open), deleteTool(open)].map((t) => forgetOnError(t as MomTool));
}
