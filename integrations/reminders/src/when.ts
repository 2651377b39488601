import { formatDuration } from "@mom/events";

/**
 * A fire time for people and the model: `Tue, 6 Jan 2026, 09:00 CET (in 23 h 5 min)`, in `zone`
 * (an IANA name or an offset like "+01:00").
 */
export function describeWhen(ms: number, nowMs: number, zone: string): string {
  const local = new Intl.DateTimeFormat("en-GB", {
    weekday: "short",
    day: "numeric",
    month: "short",
    year: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    timeZone: zone,
    timeZoneName: "short",
  }).format(new Date(ms));
  const delta = ms - nowMs;
  const from = delta < 0 ? `overdue by ${formatDuration(-delta)}: fires as soon as the scheduler sees it` : delta < 60_000 ? "in less than a minute" : `in ${formatDuration(delta)}`;
  return `${local} (${from})`;
}

/** The fixed-offset zone an ISO 8601 date-time was written in ("+01:00"; "Z" is UTC), for Intl; undefined without one. */
export function offsetZone(iso: string): string | undefined {
  const m = /(Z|[+-]\d{2}):?(\d{2})?$/.exec(iso);
  if (!m) return undefined;
  return m[1] === "Z" ? "UTC" : `${m[1]}:${m[2]}`;
}
