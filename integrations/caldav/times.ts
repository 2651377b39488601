// Times as the model gives them and as events need them. Temporal (the polyfill until Node ships
// it) does the time-zone arithmetic from the runtime's own tz database, and decides what a
// wall-clock time that a DST change skips or repeats means instead of guessing.
import { Temporal } from "temporal-polyfill";

/** A whole day (all-day events) or an exact moment. */
export type When = { allDay: true; date: Temporal.PlainDate } | { allDay: false; instant: Temporal.Instant };

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const LOCAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/;
const WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * The canonical IANA name of `tz` (`europe/vienna` → `Europe/Vienna`), or an error naming
 * `field`. Offsets (`+02:00`) are refused: they do not know about DST.
 */
export function zoneId(tz: string, field: string): string {
  const bad = () => new Error(`${field}: unknown timezone ${JSON.stringify(tz)}: use an IANA name such as Europe/Vienna, America/New_York or UTC`);
  if (!/^[A-Za-z]/.test(tz)) throw bad();
  try {
    return Temporal.Now.zonedDateTimeISO(tz).timeZoneId;
  } catch {
    throw bad();
  }
}

/** Whether `tz` is a time zone the runtime knows (event TZIDs from other clients may not be). */
export function isKnownZone(tz: string): boolean {
  try {
    zoneId(tz, "");
    return true;
  } catch {
    return false;
  }
}

/**
 * `text` as the model wrote it: `2026-10-25` (a whole day), `2026-10-25T09:30` (wall-clock time
 * in `tz`) or `2026-10-25T09:30+02:00` / `...Z` (an exact moment). A wall-clock time that `tz`
 * skips (spring forward) or has twice (fall back) is an error saying what to write instead.
 */
export function parseWhen(text: string, tz: string, field: string): When {
  const t = text.trim();
  try {
    if (DATE.test(t)) return { allDay: true, date: Temporal.PlainDate.from(t, { overflow: "reject" }) };
    if (WITH_OFFSET.test(t)) return { allDay: false, instant: Temporal.Instant.from(t) };
    if (LOCAL.test(t)) return { allDay: false, instant: wallToInstant(Temporal.PlainDateTime.from(t, { overflow: "reject" }), tz, field) };
  } catch (e) {
    if (e instanceof RangeError) throw new Error(`${field}: ${JSON.stringify(text)} is not a valid date or time`);
    throw e;
  }
  throw new Error(
    `${field}: ${JSON.stringify(text)} is not a date-time: write 2026-10-25T09:30 (wall-clock time in ${tz}), 2026-10-25T09:30+02:00 (with its UTC offset) or 2026-10-25 (a whole day)`,
  );
}

/** The moment a wall-clock time in `tz` names; refuses one that does not exist or exists twice. */
export function wallToInstant(wall: Temporal.PlainDateTime, tz: string, field: string): Temporal.Instant {
  const earlier = wall.toZonedDateTime(tz, { disambiguation: "earlier" });
  const later = wall.toZonedDateTime(tz, { disambiguation: "later" });
  if (earlier.epochNanoseconds === later.epochNanoseconds) return earlier.toInstant();
  const shown = wall.toString({ smallestUnit: "minute" });
  if (!earlier.toPlainDateTime().equals(wall)) {
    throw new Error(
      `${field}: ${shown} does not exist in ${tz} (the clocks skip it for daylight saving time): use ${later.toPlainDateTime().toString({ smallestUnit: "minute" })} or give the UTC offset`,
    );
  }
  throw new Error(
    `${field}: ${shown} happens twice in ${tz} (the clocks go back): give the UTC offset, ${shown}${earlier.offset} for the first or ${shown}${later.offset} for the second`,
  );
}

/**
 * The wall-clock time to store for `instant` in `tz`, or undefined when the stored wall time
 * would be read as another moment: iCalendar (RFC 5545 3.3.5) reads a repeated wall time as its
 * first occurrence, so the second one must be stored in UTC.
 */
export function storableWall(instant: Temporal.Instant, tz: string): Temporal.PlainDateTime | undefined {
  const wall = instant.toZonedDateTimeISO(tz).toPlainDateTime();
  return wall.toZonedDateTime(tz, { disambiguation: "earlier" }).epochNanoseconds === instant.epochNanoseconds ? wall : undefined;
}

/** An exact moment as the model reads it: `2026-10-25T01:30:00+02:00` (offset of `tz`). */
export function showInstant(instant: Temporal.Instant, tz: string): string {
  return instant.toZonedDateTimeISO(tz).toString({ timeZoneName: "never", smallestUnit: "second" });
}

/** Midnight of `date` in `tz`: where an all-day event starts for range checks. */
export function startOfDay(date: Temporal.PlainDate, tz: string): Temporal.Instant {
  return date.toZonedDateTime({ timeZone: tz }).toInstant();
}

export { Temporal };
