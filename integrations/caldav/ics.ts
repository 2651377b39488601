// iCalendar objects, built and read with ical.js (never by string concatenation: ical.js escapes
// text values and folds lines). VTIMEZONE definitions come from timezones-ical-library, so a
// stored event names its zone (DTSTART;TZID=Europe/Vienna) as calendar apps write them.
import ICAL from "ical.js";
import { tzlib_get_ical_block, tzlib_get_timezones } from "timezones-ical-library";
import { isKnownZone, showInstant, startOfDay, storableWall, Temporal, type When } from "./times.js";

const PRODID = "-//mom//caldav integration//EN";

/** A time as an event stores it: a whole day, a UTC moment, or a wall-clock time in a zone. */
export type Stamp =
  | { kind: "date"; date: Temporal.PlainDate }
  | { kind: "utc"; instant: Temporal.Instant }
  | { kind: "zoned"; wall: Temporal.PlainDateTime; tzid: string };

let vtimezoneNames: Set<string> | undefined;

/** The VTIMEZONE of IANA zone `tzid`, or undefined when the library has none under that name. */
function vtimezoneOf(tzid: string): ICAL.Component | undefined {
  vtimezoneNames ??= new Set(tzlib_get_timezones() as string[]);
  if (!vtimezoneNames.has(tzid)) return undefined;
  const block = tzlib_get_ical_block(tzid);
  if (!Array.isArray(block) || !block[0]) return undefined;
  const component = ICAL.Component.fromString(block[0]);
  return component.getFirstPropertyValue("tzid") === tzid ? component : undefined;
}

/**
 * How to store `when` for an event in zone `tz`: the wall-clock time in `tz` when that reads back
 * as the same moment and a VTIMEZONE for `tz` exists, else UTC (a repeated wall time's second
 * occurrence, or UTC itself).
 */
export function stampOf(when: When, tz: string): Stamp {
  if (when.allDay) return { kind: "date", date: when.date };
  const wall = tz === "UTC" ? undefined : storableWall(when.instant, tz);
  if (wall && vtimezoneOf(tz)) return { kind: "zoned", wall, tzid: tz };
  return { kind: "utc", instant: when.instant };
}

function ensureVtimezone(cal: ICAL.Component, tzid: string): ICAL.Component {
  const present = cal.getAllSubcomponents("vtimezone").find((z) => z.getFirstPropertyValue("tzid") === tzid);
  if (present) return present;
  const made = vtimezoneOf(tzid);
  if (!made) throw new Error(`no VTIMEZONE for ${tzid}`);
  cal.addSubcomponent(made);
  return made;
}

function icalTime(stamp: Stamp, cal: ICAL.Component): ICAL.Time {
  if (stamp.kind === "date") return ICAL.Time.fromData({ year: stamp.date.year, month: stamp.date.month, day: stamp.date.day, isDate: true });
  const wall = stamp.kind === "utc" ? stamp.instant.toZonedDateTimeISO("UTC").toPlainDateTime() : stamp.wall;
  const fields = { year: wall.year, month: wall.month, day: wall.day, hour: wall.hour, minute: wall.minute, second: wall.second, isDate: false };
  if (stamp.kind === "utc") return ICAL.Time.fromData(fields, ICAL.Timezone.utcTimezone);
  const zone = new ICAL.Timezone({ component: ensureVtimezone(cal, stamp.tzid), tzid: stamp.tzid });
  return ICAL.Time.fromData(fields, zone);
}

const utcNow = (now: Date) => ICAL.Time.fromJSDate(now, true);

/** Text and calendar objects must end each line with CRLF (RFC 5545 3.1); ical.js leaves off the last. */
const serialize = (cal: ICAL.Component) => `${cal.toString()}\r\n`;

export interface NewEvent {
  uid: string;
  title: string;
  start: Stamp;
  end: Stamp;
  description?: string;
  location?: string;
  now: Date;
}

/** A VCALENDAR with one VEVENT (and the VTIMEZONE its times name). */
export function newEventIcs(e: NewEvent): string {
  const cal = new ICAL.Component(["vcalendar", [], []]);
  cal.updatePropertyWithValue("prodid", PRODID);
  cal.updatePropertyWithValue("version", "2.0");
  const start = icalTime(e.start, cal);
  const end = icalTime(e.end, cal);
  const vevent = new ICAL.Component("vevent");
  const event = new ICAL.Event(vevent);
  event.uid = e.uid;
  vevent.updatePropertyWithValue("dtstamp", utcNow(e.now));
  vevent.updatePropertyWithValue("created", utcNow(e.now));
  vevent.updatePropertyWithValue("last-modified", utcNow(e.now));
  event.startDate = start;
  event.endDate = end;
  event.summary = e.title;
  if (e.location) event.location = e.location;
  if (e.description) event.description = e.description;
  cal.addSubcomponent(vevent);
  return serialize(cal);
}

/**
 * The moment (or day) an ical.js time names. A TZID the runtime knows is resolved with its tz
 * database the RFC 5545 way (a repeated wall time is its first occurrence, a skipped one uses the
 * offset before the gap: Temporal's "compatible"); another TZID with a VTIMEZONE in the object by
 * that definition; a floating time (no zone) as a wall time in `tz`.
 */
export function momentOf(t: ICAL.Time, tz: string): When {
  if (t.isDate) return { allDay: true, date: new Temporal.PlainDate(t.year, t.month, t.day) };
  const wall = new Temporal.PlainDateTime(t.year, t.month, t.day, t.hour, t.minute, t.second);
  const zone = t.zone;
  if (zone === ICAL.Timezone.utcTimezone || zone?.tzid === "UTC") return { allDay: false, instant: wall.toZonedDateTime("UTC").toInstant() };
  // An unresolved TZID (no VTIMEZONE in the object) leaves the zone floating and the name here.
  const tzid = zone && zone !== ICAL.Timezone.localTimezone ? zone.tzid : (t as unknown as { timezone?: string }).timezone;
  if (tzid && isKnownZone(tzid)) return { allDay: false, instant: wall.toZonedDateTime(tzid, { disambiguation: "compatible" }).toInstant() };
  if (zone && zone !== ICAL.Timezone.localTimezone) return { allDay: false, instant: Temporal.Instant.fromEpochMilliseconds(t.toUnixTime() * 1000) };
  return { allDay: false, instant: wall.toZonedDateTime(tz, { disambiguation: "compatible" }).toInstant() };
}

/** The zone an event's start names, when it is one the runtime knows (a move keeps it). */
function zoneOfTime(t: ICAL.Time): string | undefined {
  if (t.isDate) return undefined;
  if (t.zone === ICAL.Timezone.utcTimezone) return "UTC";
  const tzid = t.zone && t.zone !== ICAL.Timezone.localTimezone ? t.zone.tzid : (t as unknown as { timezone?: string }).timezone;
  return tzid && isKnownZone(tzid) ? tzid : undefined;
}

export interface Occurrence {
  uid: string;
  title: string;
  /** `2026-10-25T01:30:00+02:00` in the listing's zone, or `2026-10-25` for an all-day event. */
  start: string;
  /** Exclusive, like iCalendar's DTEND (an all-day event on the 25th ends on the 26th). */
  end: string;
  allDay: boolean;
  location?: string;
  recurring: boolean;
  /** For sorting. */
  at: bigint;
}

/** At most this many occurrences of one series are looked at (a daily event over decades). */
const MAX_EXPANSION = 20_000;

function boundsOf(start: When, end: When, tz: string): [Temporal.Instant, Temporal.Instant] {
  const a = start.allDay ? startOfDay(start.date, tz) : start.instant;
  const b = end.allDay ? startOfDay(end.date, tz) : end.instant;
  return [a, b];
}

function show(w: When, tz: string): string {
  return w.allDay ? w.date.toString() : showInstant(w.instant, tz);
}

/**
 * The events of one stored object that overlap [from, to), recurring ones expanded (ical.js
 * applies RRULE, RDATE, EXDATE and RECURRENCE-ID overrides), times shown in `tz`.
 */
export function occurrencesIn(ics: string, from: Temporal.Instant, to: Temporal.Instant, tz: string): { occurrences: Occurrence[]; capped: boolean } {
  const cal = ICAL.Component.fromString(ics);
  const vevents = cal.name === "vevent" ? [cal] : cal.getAllSubcomponents("vevent");
  const masters = vevents.filter((v) => !v.hasProperty("recurrence-id"));
  const overrides = vevents.filter((v) => v.hasProperty("recurrence-id"));
  const out: Occurrence[] = [];
  let capped = false;
  const push = (event: ICAL.Event, startT: ICAL.Time, endT: ICAL.Time, recurring: boolean) => {
    const start = momentOf(startT, tz);
    const end = momentOf(endT, tz);
    const [a, b] = boundsOf(start, end, tz);
    const overlaps = Temporal.Instant.compare(a, to) < 0 && (Temporal.Instant.compare(b, from) > 0 || (Temporal.Instant.compare(a, b) === 0 && Temporal.Instant.compare(a, from) >= 0));
    if (!overlaps) return;
    const location = event.location;
    out.push({
      uid: event.uid,
      title: event.summary ?? "",
      start: show(start, tz),
      end: show(end, tz),
      allDay: start.allDay,
      ...(location ? { location } : {}),
      recurring,
      at: a.epochNanoseconds,
    });
  };
  for (const master of masters) {
    const uid = master.getFirstPropertyValue("uid");
    const event = new ICAL.Event(master, { exceptions: overrides.filter((o) => o.getFirstPropertyValue("uid") === uid) });
    if (!event.isRecurring()) {
      push(event, event.startDate, event.endDate, false);
      continue;
    }
    const it = event.iterator();
    let n = 0;
    for (let next = it.next(); next; next = it.next()) {
      if (++n > MAX_EXPANSION) {
        capped = true;
        break;
      }
      const d = event.getOccurrenceDetails(next);
      const start = momentOf(d.startDate, tz);
      if (Temporal.Instant.compare(start.allDay ? startOfDay(start.date, tz) : start.instant, to) >= 0) break;
      push(d.item, d.startDate, d.endDate, true);
    }
  }
  // An override whose series is not in this object (an invitation to one occurrence).
  for (const o of overrides) {
    const uid = o.getFirstPropertyValue("uid");
    if (masters.some((m) => m.getFirstPropertyValue("uid") === uid)) continue;
    const event = new ICAL.Event(o);
    push(event, event.startDate, event.endDate, true);
  }
  return { occurrences: out, capped };
}

/** The UIDs of the events in a stored object (one object holds one event and its overrides). */
export function uidsOf(ics: string): string[] {
  const cal = ICAL.Component.fromString(ics);
  return [...new Set(cal.getAllSubcomponents("vevent").map((v) => String(v.getFirstPropertyValue("uid") ?? "")))];
}

/** One stored, non-recurring event, to read and to change the times of. */
export class StoredEvent {
  private readonly cal: ICAL.Component;
  private readonly vevent: ICAL.Component;
  readonly event: ICAL.Event;
  /** Why the event cannot be moved (a series), or undefined. */
  readonly unmovable?: string;

  constructor(ics: string, uid: string) {
    this.cal = ICAL.Component.fromString(ics);
    const vevents = this.cal.getAllSubcomponents("vevent").filter((v) => v.getFirstPropertyValue("uid") === uid);
    const master = vevents.find((v) => !v.hasProperty("recurrence-id")) ?? vevents[0];
    if (!master) throw new Error(`no VEVENT with UID ${uid}`);
    this.vevent = master;
    this.event = new ICAL.Event(master);
    if (vevents.length > 1 || this.event.isRecurring() || master.hasProperty("recurrence-id")) this.unmovable = "it is a recurring event (a series or one of its occurrences)";
  }

  get title(): string {
    return this.event.summary ?? "";
  }

  get recurring(): boolean {
    return this.unmovable !== undefined;
  }

  /** The zone its start is stored in, when the runtime knows it. */
  get zone(): string | undefined {
    return zoneOfTime(this.event.startDate);
  }

  times(tz: string): { start: When; end: When } {
    return { start: momentOf(this.event.startDate, tz), end: momentOf(this.event.endDate, tz) };
  }

  describe(tz: string): string {
    const { start, end } = this.times(tz);
    return `${show(start, tz)} → ${show(end, tz)}`;
  }

  /** The object with new start and end (DTEND replaces a DURATION); SEQUENCE goes up, as RFC 5545 asks of a rescheduling. */
  retimed(start: Stamp, end: Stamp, now: Date): string {
    this.event.startDate = icalTime(start, this.cal);
    // Setting DTEND leaves a DURATION in place: drop it, the event may have only one.
    this.vevent.removeAllProperties("duration");
    this.event.endDate = icalTime(end, this.cal);
    this.event.sequence = (this.event.sequence ?? 0) + 1;
    this.vevent.updatePropertyWithValue("dtstamp", utcNow(now));
    this.vevent.updatePropertyWithValue("last-modified", utcNow(now));
    return serialize(this.cal);
  }
}
