import { describe, expect, it } from "@jest/globals";
import { parseEventFile } from "./event-file.js";
import { nextFireTime } from "./next-fire.js";

const owner = { adapter: "cli", channelId: "local" };
const event = (o: object) => {
  const r = parseEventFile("e.json", JSON.stringify(o), { adapters: new Set(["cli"]) }, owner);
  if (!r.ok) throw new Error(r.reason);
  return r.event;
};
const now = Date.parse("2026-01-09T07:59:00Z");

describe("nextFireTime", () => {
  it("a one-shot fires at its `at`, also when that has passed", () => {
    expect(nextFireTime(event({ type: "one-shot", text: "t", at: "2026-01-10T09:00:00+01:00" }), now)).toBe(Date.parse("2026-01-10T08:00:00Z"));
    expect(nextFireTime(event({ type: "one-shot", text: "t", at: "2026-01-01T09:00:00+01:00" }), now)).toBe(Date.parse("2026-01-01T08:00:00Z"));
  });

  it("a periodic one at its first tick strictly after now, in its time zone", () => {
    const e = event({ type: "periodic", text: "t", schedule: "0 9 * * 1-5", timezone: "Europe/Vienna" });
    expect(nextFireTime(e, now)).toBe(Date.parse("2026-01-09T08:00:00Z"));
    expect(nextFireTime(e, Date.parse("2026-01-09T08:00:00Z"))).toBe(Date.parse("2026-01-12T08:00:00Z"));
  });

  it("an immediate one when its file was written", () => {
    expect(nextFireTime(event({ type: "immediate", text: "t" }), now, now - 1234.5)).toBe(now - 1235);
    expect(nextFireTime(event({ type: "immediate", text: "t" }), now)).toBe(now);
  });
});
