import { Cron } from "croner";

// Pure time arithmetic of event files: cron ticks in a time zone, `at` dates, lateness. Everything
// here takes "now" as an argument, so it is tested without timers and every replica computes the
// same fire times (and so the same msg-ids) from the same file.

/** True when `tz` is an IANA time zone this Node knows (Europe/Vienna, UTC, America/New_York…). */
export function isTimeZone(tz: string): boolean {
  if (!tz || tz.trim() !== tz) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/**
 * A cron schedule (5 fields, minute precision, or 6 with seconds first; croner's syntax: ranges,
 * steps, names, L, W, #, @daily…) evaluated in an IANA time zone. Day of month and day of week
 * combine with OR, as in Vixie cron.
 *
 * DST: a job at a fixed local time (one value each in minute and hour, e.g. `30 2 * * *`) that falls
 * into the spring-forward gap runs at the first valid time after it (03:00), and runs once when the
 * time occurs twice in the autumn. Interval jobs (`*\/30 * * * *`) skip the times that do not exist
 * and run at both occurrences of a repeated time — they follow the wall clock.
 */
export class CronSchedule {
  private readonly cron: Cron;

  /** Throws an Error whose message says what is wrong with the pattern or the time zone. */
  constructor(
    readonly pattern: string,
    readonly timezone: string,
  ) {
    if (!isTimeZone(timezone)) throw new Error(`unknown time zone ${JSON.stringify(timezone)}`);
    try {
      this.cron = new Cron(pattern, { paused: true, timezone, mode: "5-or-6-parts" });
    } catch (err) {
      throw new Error(((err as Error).message ?? String(err)).replace(/^CronPattern: /, ""));
    }
  }

  /** The first tick strictly after `after`; undefined when the pattern never matches again. */
  nextAfter(after: Date): Date | undefined {
    return this.cron.nextRun(after) ?? undefined;
  }

  /** The next `n` ticks strictly after `after`. */
  nextN(n: number, after: Date): Date[] {
    return this.cron.nextRuns(n, after);
  }
}

// ISO 8601 with a mandatory offset: 2026-12-15T09:00:00+01:00, …T08:00:00Z, …T09:00+01:00,
// fractions of a second allowed. A date without an offset would mean a different instant on every
// host, and replicas in different time zones would fire it at different times.
const ISO_WITH_OFFSET = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-](\d{2}):?(\d{2}))$/;

/** Parses an ISO 8601 date-time with an offset; undefined when it is not one or names no real time. */
export function parseIsoWithOffset(text: string): Date | undefined {
  const m = ISO_WITH_OFFSET.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s = "0", , , oh = "0", om = "0"] = m;
  const nums = { y: +y!, mo: +mo!, d: +d!, h: +h!, mi: +mi!, s: +s };
  const daysInMonth = new Date(Date.UTC(nums.y, nums.mo, 0)).getUTCDate();
  if (nums.mo < 1 || nums.mo > 12 || nums.d < 1 || nums.d > daysInMonth) return undefined;
  if (nums.h > 23 || nums.mi > 59 || nums.s > 59 || +oh > 23 || +om > 59) return undefined;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/** "12 minutes", "1 minute", "3 h 5 min", "2 days 4 h" — for people and the agent. */
export function formatDuration(ms: number): string {
  const minutes = Math.max(0, Math.floor(ms / 60_000));
  if (minutes < 60) return `${minutes} minute${minutes === 1 ? "" : "s"}`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h${minutes % 60 ? ` ${minutes % 60} min` : ""}`;
  const days = Math.floor(hours / 24);
  return `${days} days${hours % 24 ? ` ${hours % 24} h` : ""}`;
}

/** A firing this much after its time is marked late (a scheduler that was down, or very busy). */
export const LATE_AFTER_MS = 60_000;
