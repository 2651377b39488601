import { afterAll, afterEach, describe, expect, it } from "@jest/globals";
import { harness, type Harness, stopNats } from "./test-support/harness.js";

// Periodic events through the whole scheduler (real NATS, real files) while a FakeClock walks
// across the days the clocks change and across a month's end: each day's tick fires exactly once.
let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});
afterAll(stopNats);

const local = { channelId: "cli/local" };
const hour = 3_600_000;
// Below LATE_AFTER_MS, so every tick is reached before it counts as overdue; off the minute, so a
// tick is handled a little after its time, as a real timer does.
const STEP_MS = 50_000;
const OFFSET_MS = 7_000;

/** Moves the clock from `from` to `to` in steps, letting the scheduler finish each step's work. */
async function walk(s: Harness, from: number, to: number): Promise<void> {
  for (let t = from + OFFSET_MS; t <= to; t += STEP_MS) {
    s.clock.set(t);
    await s.sched!.scheduler.idle();
  }
}

/** The fire times (from the msg-ids) of the file's firings so far. */
async function fired(s: Harness, file: string): Promise<string[]> {
  return (await s.inbound()).filter((m) => m.id.startsWith(`${file}@`)).map((m) => m.id.slice(file.length + 1));
}

const berlinDate = (iso: string) => new Intl.DateTimeFormat("en-CA", { timeZone: "Europe/Berlin", year: "numeric", month: "2-digit", day: "2-digit" }).format(new Date(iso));

describe("periodic events across daylight saving time (Europe/Berlin)", () => {
  for (const [change, days, expected] of [
    // 2026-03-29: 02:00 CET -> 03:00 CEST, so 02:30 does not exist; it fires at 03:00 CEST.
    ["spring forward", ["2026-03-28", "2026-03-29", "2026-03-30"], ["2026-03-28T01:30:00.000Z", "2026-03-29T01:00:00.000Z", "2026-03-30T00:30:00.000Z"]],
    // 2026-10-25: 03:00 CEST -> 02:00 CET, so 02:30 happens twice; it fires at the first.
    ["fall back", ["2026-10-24", "2026-10-25", "2026-10-26"], ["2026-10-24T00:30:00.000Z", "2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"]],
  ] as const) {
    it(`"30 2 * * *" fires once on each day around the ${change}`, async () => {
      const s = (h = await harness());
      // From 22:00 UTC the day before each day to 04:00 UTC: local midnight to past 05:00, both offsets.
      const windows = days.map((d) => [Date.parse(`${d}T00:00:00Z`) - 2 * hour, Date.parse(`${d}T04:00:00Z`)] as const);
      s.clock.set(windows[0]![0]);
      await s.start();
      s.write("nightly.json", { type: "periodic", ...local, text: "nightly", schedule: "30 2 * * *", timezone: "Europe/Berlin" });
      await s.settle();
      for (const [from, to] of windows) await walk(s, from, to);
      const times = await fired(s, "nightly.json");
      expect(times).toEqual(expected);
      expect(times.map(berlinDate)).toEqual(days);
    }, 60_000);
  }

  it("a scheduler started in the repeated hour, after the first 02:30, does not fire the second one", async () => {
    const s = (h = await harness());
    const from = Date.parse("2026-10-25T00:45:00Z"); // 02:45 CEST; 02:30 CET comes at 01:30 UTC
    s.clock.set(from);
    await s.start();
    s.write("nightly.json", { type: "periodic", ...local, text: "nightly", schedule: "30 2 * * *", timezone: "Europe/Berlin" });
    await s.settle();
    expect(s.sched!.scheduler.scheduled()[0]!.next).toBe("2026-10-26T01:30:00.000Z");
    await walk(s, from, Date.parse("2026-10-25T04:00:00Z"));
    expect(await fired(s, "nightly.json")).toEqual([]);
  }, 60_000);
});

describe("periodic events across midnight UTC and the first of a month", () => {
  it("a daily, a monthly and a local-midnight event each fire once", async () => {
    const s = (h = await harness());
    const from = Date.parse("2026-11-30T23:00:00Z");
    s.clock.set(from);
    await s.start();
    s.write("daily.json", { type: "periodic", ...local, text: "daily", schedule: "0 0 * * *", timezone: "UTC" });
    s.write("monthly.json", { type: "periodic", ...local, text: "monthly", schedule: "0 0 1 * *", timezone: "UTC" });
    // 01:00 in Berlin on the 1st is midnight UTC too.
    s.write("berlin.json", { type: "periodic", ...local, text: "berlin", schedule: "0 1 1 * *", timezone: "Europe/Berlin" });
    await s.settle();
    await walk(s, from, Date.parse("2026-12-01T01:00:00Z"));
    expect(await fired(s, "daily.json")).toEqual(["2026-12-01T00:00:00.000Z"]);
    expect(await fired(s, "monthly.json")).toEqual(["2026-12-01T00:00:00.000Z"]);
    expect(await fired(s, "berlin.json")).toEqual(["2026-12-01T00:00:00.000Z"]);
    expect(Object.fromEntries(s.sched!.scheduler.scheduled().map((e) => [e.file, e.next]))).toEqual({
      "berlin.json": "2027-01-01T00:00:00.000Z",
      "daily.json": "2026-12-02T00:00:00.000Z",
      "monthly.json": "2027-01-01T00:00:00.000Z",
    });
  }, 60_000);
});
