import { describe, expect, it } from "@jest/globals";
import { CronSchedule, formatDuration, isTimeZone, parseIsoWithOffset } from "./schedule.js";

const iso = (d: Date | undefined) => d?.toISOString();
const ticks = (pattern: string, tz: string, from: string, n: number) => new CronSchedule(pattern, tz).nextN(n, new Date(from)).map((d) => d.toISOString());

describe("CronSchedule: time zones", () => {
  it("fires at the local time of its zone, on weekdays only for 1-5", () => {
    // Friday 2026-01-09 07:59 UTC = 08:59 in Vienna (CET, +01:00)
    expect(ticks("0 9 * * 1-5", "Europe/Vienna", "2026-01-09T07:59:00Z", 3)).toEqual([
      "2026-01-09T08:00:00.000Z", // Fri 09:00 CET
      "2026-01-12T08:00:00.000Z", // Mon
      "2026-01-13T08:00:00.000Z",
    ]);
    expect(ticks("0 9 * * *", "America/New_York", "2026-01-09T00:00:00Z", 1)).toEqual(["2026-01-09T14:00:00.000Z"]);
    expect(ticks("0 9 * * *", "UTC", "2026-01-09T00:00:00Z", 1)).toEqual(["2026-01-09T09:00:00.000Z"]);
    expect(ticks("30 9 * * *", "Asia/Kolkata", "2026-01-09T00:00:00Z", 1)).toEqual(["2026-01-09T04:00:00.000Z"]);
  });

  it("the next tick is strictly after the given time", () => {
    const c = new CronSchedule("0 9 * * *", "UTC");
    expect(iso(c.nextAfter(new Date("2026-01-09T09:00:00.000Z")))).toBe("2026-01-10T09:00:00.000Z");
    expect(iso(c.nextAfter(new Date("2026-01-09T08:59:59.999Z")))).toBe("2026-01-09T09:00:00.000Z");
  });

  it("accepts a seconds field, names and nicknames", () => {
    expect(ticks("*/20 * * * * *", "UTC", "2026-01-09T00:00:01Z", 3)).toEqual(["2026-01-09T00:00:20.000Z", "2026-01-09T00:00:40.000Z", "2026-01-09T00:01:00.000Z"]);
    expect(ticks("0 8 * * MON", "UTC", "2026-01-09T00:00:00Z", 1)).toEqual(["2026-01-12T08:00:00.000Z"]);
    expect(ticks("@daily", "Europe/Vienna", "2026-01-09T12:00:00Z", 1)).toEqual(["2026-01-09T23:00:00.000Z"]);
  });

  it("rejects bad patterns and unknown zones with a reason", () => {
    expect(() => new CronSchedule("0 9 * *", "UTC")).toThrow(/five, six, or seven/);
    expect(() => new CronSchedule("61 * * * *", "UTC")).toThrow(/minute/);
    expect(() => new CronSchedule("0 9 * * 1-5 2026 x", "UTC")).toThrow();
    expect(() => new CronSchedule("0 9 * * *", "Mars/Olympus")).toThrow(/unknown time zone "Mars\/Olympus"/);
    expect(new CronSchedule("0 0 30 2 *", "UTC").nextAfter(new Date("2026-01-01T00:00:00Z"))).toBeUndefined();
  });
});

describe("CronSchedule: daylight saving time (Europe/Vienna: 2026-03-29 02:00 -> 03:00, 2026-10-25 03:00 -> 02:00)", () => {
  it("keeps 09:00 local across the change: the UTC time moves by an hour", () => {
    expect(ticks("0 9 * * *", "Europe/Vienna", "2026-03-28T00:00:00Z", 2)).toEqual(["2026-03-28T08:00:00.000Z", "2026-03-29T07:00:00.000Z"]);
    expect(ticks("0 9 * * *", "Europe/Vienna", "2026-10-24T00:00:00Z", 2)).toEqual(["2026-10-24T07:00:00.000Z", "2026-10-25T08:00:00.000Z"]);
  });

  it("a fixed time inside the spring gap fires once, at the first valid time after it", () => {
    expect(ticks("30 2 * * *", "Europe/Vienna", "2026-03-28T12:00:00Z", 2)).toEqual([
      "2026-03-29T01:00:00.000Z", // 03:00 CEST: 02:30 does not exist that day
      "2026-03-30T00:30:00.000Z", // 02:30 CEST
    ]);
  });

  it("a fixed time inside the repeated autumn hour fires once", () => {
    expect(ticks("30 2 * * *", "Europe/Vienna", "2026-10-24T12:00:00Z", 2)).toEqual([
      "2026-10-25T00:30:00.000Z", // 02:30 CEST, the first of the two
      "2026-10-26T01:30:00.000Z", // 02:30 CET
    ]);
  });

  it("an interval schedule follows the wall clock: skips the lost hour, repeats the doubled one", () => {
    expect(ticks("0 * * * *", "Europe/Vienna", "2026-03-28T23:30:00Z", 3)).toEqual([
      "2026-03-29T00:00:00.000Z", // 01:00 CET
      "2026-03-29T01:00:00.000Z", // 03:00 CEST (02:00 does not exist)
      "2026-03-29T02:00:00.000Z", // 04:00 CEST
    ]);
    expect(ticks("*/30 * * * *", "Europe/Vienna", "2026-10-25T00:10:00Z", 4)).toEqual([
      "2026-10-25T00:30:00.000Z", // 02:30 CEST
      "2026-10-25T01:00:00.000Z", // 02:00 CET
      "2026-10-25T01:30:00.000Z", // 02:30 CET
      "2026-10-25T02:00:00.000Z", // 03:00 CET
    ]);
  });

  it("the southern hemisphere changes the other way (Australia/Sydney, 2026-04-05 and 2026-10-04)", () => {
    expect(ticks("0 9 * * *", "Australia/Sydney", "2026-04-03T00:00:00Z", 3)).toEqual([
      "2026-04-03T22:00:00.000Z", // Sat 09:00 AEDT (+11)
      "2026-04-04T23:00:00.000Z", // Sun 09:00 AEST (+10)
      "2026-04-05T23:00:00.000Z",
    ]);
  });
});

describe("dates and durations", () => {
  it("parses ISO 8601 with an offset only", () => {
    expect(iso(parseIsoWithOffset("2026-12-15T09:00:00+01:00"))).toBe("2026-12-15T08:00:00.000Z");
    expect(iso(parseIsoWithOffset("2026-12-15T08:00:00Z"))).toBe("2026-12-15T08:00:00.000Z");
    expect(iso(parseIsoWithOffset("2026-12-15T09:00+01:00"))).toBe("2026-12-15T08:00:00.000Z");
    expect(iso(parseIsoWithOffset("2026-12-15T08:00:00.250-05:00"))).toBe("2026-12-15T13:00:00.250Z");
    for (const bad of ["2026-12-15T09:00:00", "2026-12-15", "tomorrow 9am", "2026-02-30T09:00:00Z", "2026-13-01T09:00:00Z", "2026-12-15T24:00:00Z", "1733994000"]) {
      expect(parseIsoWithOffset(bad)).toBeUndefined();
    }
  });

  it("knows IANA zones", () => {
    expect(isTimeZone("Europe/Vienna")).toBe(true);
    expect(isTimeZone("UTC")).toBe(true);
    expect(isTimeZone("Mars/Olympus")).toBe(false);
    expect(isTimeZone("")).toBe(false);
  });

  it("formats durations for people", () => {
    expect(formatDuration(60_000)).toBe("1 minute");
    expect(formatDuration(12 * 60_000 + 59_000)).toBe("12 minutes");
    expect(formatDuration(185 * 60_000)).toBe("3 h 5 min");
    expect(formatDuration(52 * 3_600_000)).toBe("2 days 4 h");
  });
});
