import { describe, expect, it } from "@jest/globals";
import { parseWhen, showInstant, storableWall, Temporal, zoneId } from "./times.js";

const instant = (text: string) => {
  const w = parseWhen(text, "Europe/Vienna", "start");
  if (w.allDay) throw new Error("expected a moment");
  return w.instant;
};

describe("times the model writes", () => {
  it("reads wall-clock times in the zone, moments with an offset, and whole days", () => {
    expect(instant("2026-10-25T01:30").toString()).toBe("2026-10-24T23:30:00Z");
    expect(instant("2026-10-25T04:30").toString()).toBe("2026-10-25T03:30:00Z");
    expect(instant("2026-10-25T02:30+01:00").toString()).toBe("2026-10-25T01:30:00Z");
    expect(instant("2026-10-25T09:00Z").toString()).toBe("2026-10-25T09:00:00Z");
    expect(parseWhen("2026-10-25", "Europe/Vienna", "start")).toEqual({ allDay: true, date: Temporal.PlainDate.from("2026-10-25") });
    expect(showInstant(instant("2026-10-25T04:30"), "Europe/Vienna")).toBe("2026-10-25T04:30:00+01:00");
  });

  it("refuses a wall-clock time the clocks skip or repeat, saying what to write", () => {
    expect(() => parseWhen("2026-03-29T02:30", "Europe/Vienna", "start")).toThrow(
      "start: 2026-03-29T02:30 does not exist in Europe/Vienna (the clocks skip it for daylight saving time): use 2026-03-29T03:30 or give the UTC offset",
    );
    expect(() => parseWhen("2026-10-25T02:30", "Europe/Vienna", "end")).toThrow(
      "end: 2026-10-25T02:30 happens twice in Europe/Vienna (the clocks go back): give the UTC offset, 2026-10-25T02:30+02:00 for the first or 2026-10-25T02:30+01:00 for the second",
    );
  });

  it("refuses what is not a date-time, an impossible date, and unknown zones", () => {
    expect(() => parseWhen("next tuesday", "UTC", "start")).toThrow(/start: "next tuesday" is not a date-time: write 2026-10-25T09:30/);
    expect(() => parseWhen("2026-10-25T09:30[Europe/Paris]", "UTC", "start")).toThrow(/is not a date-time/);
    expect(() => parseWhen("2026-02-30", "UTC", "start")).toThrow('start: "2026-02-30" is not a valid date or time');
    expect(() => zoneId("Mars/Olympus", "timezone")).toThrow('timezone: unknown timezone "Mars/Olympus": use an IANA name such as Europe/Vienna');
    expect(() => zoneId("+02:00", "timezone")).toThrow(/unknown timezone "\+02:00"/);
    expect(zoneId("europe/vienna", "timezone")).toBe("Europe/Vienna");
  });

  it("stores a repeated wall time only for its first occurrence (RFC 5545 reads it so)", () => {
    expect(storableWall(instant("2026-10-25T02:30+02:00"), "Europe/Vienna")?.toString()).toBe("2026-10-25T02:30:00");
    expect(storableWall(instant("2026-10-25T02:30+01:00"), "Europe/Vienna")).toBeUndefined();
  });
});
