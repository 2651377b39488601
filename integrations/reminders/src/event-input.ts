import { type ChannelRef, qualifiedChannelId } from "@mom/contracts";
import { isTimeZone, MAX_EVENT_FILE_BYTES, nextFireTime, parseEventFile, parseIsoWithOffset, type ScheduledEvent } from "@mom/events";
import { DateTime } from "luxon";
import { offsetZone } from "./when.js";

/** What `reminders.event.create` is given (already checked against its schema: strings). */
export interface CreateInput {
  text: string;
  at?: string;
  schedule?: string;
  timezone?: string;
}

/** An event ready to be written: its file's text, as parsed back by the scheduler's own parser. */
export interface PlannedEvent {
  /** The event file's text. */
  json: string;
  event: Exclude<ScheduledEvent, { type: "immediate" }>;
  /** Its next firing (epoch ms), as the scheduler computes it. */
  nextMs: number;
  /** The zone its times are shown in: the given or default one, or the offset of an `at` given with one. */
  zone: string;
}

/** The input cannot become an event; the message says what to change. Nothing was written. */
export class EventInputError extends Error {
  override name = "EventInputError";
}

// A date-time without an offset: a wall-clock time in a time zone (2026-12-15T09:00, seconds optional).
const LOCAL_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/;

/**
 * Turns the tool's input into the event file the scheduler would accept for the channel `owner`,
 * or throws an EventInputError. The file is validated by the scheduler's parser (@mom/events), so
 * whatever it refuses is refused here with the same reason, and a one-shot must lie in the future
 * (the scheduler would fire a past one at once, marked late, or move it to missed/).
 */
export function planEvent(input: CreateInput, owner: ChannelRef, file: string, opts: { nowMs: number; defaultTimezone: string }): PlannedEvent {
  const at = input.at?.trim() || undefined;
  const schedule = input.schedule?.trim() || undefined;
  if (at && schedule) throw new EventInputError(`give either "at" (a one-shot reminder) or "schedule" (a periodic one), not both`);
  if (!at && !schedule) throw new EventInputError(`say when: "at" for a one-shot reminder (e.g. "2026-12-15T09:00" with "timezone", or "2026-12-15T09:00:00+01:00") or "schedule" for a periodic one (a cron expression like "0 9 * * 1-5")`);
  const timezone = input.timezone?.trim() || undefined;
  if (timezone !== undefined && !isTimeZone(timezone)) {
    throw new EventInputError(`unknown time zone ${JSON.stringify(timezone)} (expected an IANA name like "Europe/Vienna" or "UTC")`);
  }
  const zone = timezone ?? opts.defaultTimezone;

  const channelId = qualifiedChannelId(owner);
  let fields: Record<string, unknown>;
  let shownZone = zone;
  if (at) {
    const written = at.match(LOCAL_DATE_TIME) ? localToOffset(at, zone) : at;
    // An `at` with its own offset is shown in that offset unless a zone was named.
    if (written === at && timezone === undefined && parseIsoWithOffset(at)) shownZone = offsetZone(at) ?? zone;
    fields = { type: "one-shot", channelId, text: input.text, at: written, ...(shownZone === zone && { timezone: zone }) };
  } else {
    fields = { type: "periodic", channelId, text: input.text, schedule, timezone: zone };
  }
  const json = `${JSON.stringify(fields, null, 2)}\n`;
  const bytes = Buffer.byteLength(json);
  // The scheduler reads at most this much of a file; a bigger one it refuses as "too large".
  if (bytes > MAX_EVENT_FILE_BYTES) throw new EventInputError(`too large: ${bytes} bytes (an event file has at most ${MAX_EVENT_FILE_BYTES} bytes); shorten "text"`);

  const parsed = parseEventFile(file, json, { adapters: new Set([owner.adapter]) }, owner);
  if (!parsed.ok) throw new EventInputError(parsed.reason);
  // One-shot or periodic: `fields` never says "immediate".
  const event = parsed.event as PlannedEvent["event"];
  const nextMs = nextFireTime(event, opts.nowMs);
  if (nextMs === undefined) throw new EventInputError(`bad cron ${JSON.stringify(schedule)}: it never fires again`);
  if (event.type === "one-shot" && nextMs <= opts.nowMs) {
    throw new EventInputError(`"at" ${JSON.stringify(event.at)} is in the past (now is ${new Date(opts.nowMs).toISOString()}); give a future time`);
  }
  return { json, event, nextMs, zone: shownZone };
}

/** A wall-clock time in `zone` as ISO 8601 with that zone's offset then; a time the zone skips is refused. */
function localToOffset(local: string, zone: string): string {
  const dt = DateTime.fromISO(local, { zone });
  if (!dt.isValid) throw new EventInputError(`bad date: "at" is ${JSON.stringify(local)} (${dt.invalidExplanation ?? dt.invalidReason}), expected a date-time like "2026-12-15T09:00"`);
  // Luxon moves a time in a spring-forward gap to after it; a reminder at a time that never
  // happens is better asked about than moved.
  if (dt.toFormat("yyyy-MM-dd'T'HH:mm") !== local.slice(0, 16)) {
    throw new EventInputError(`${local} does not exist in ${zone} (the clocks skip it that day); give another time, e.g. ${dt.toFormat("yyyy-MM-dd'T'HH:mm")}`);
  }
  return dt.toISO({ suppressMilliseconds: true })!;
}
