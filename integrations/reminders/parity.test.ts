import { afterAll, afterEach, describe, expect, it } from "@jest/globals";
import type { ChannelMessage } from "@mom/contracts";
import { EventScheduler, FakeClock, type SchedulerSettings } from "@mom/scheduler";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { cleanup, type Fixture, fixture, localDay } from "./src/test-support.js";

// The tool and the scheduler judge an event with one parser (@mom/events). These tests hold the
// real scheduler engine to it: what create accepts the engine schedules at the fire time create
// reported; what create refuses, the engine refuses for the same reason when the model writes the
// same event into events/ by hand.
afterAll(cleanup);

const CREATE = "reminders.event.create";
const settings: SchedulerSettings = { graceMinutes: 60, maxQueuedPerChannel: 100, maxPerMinutePerChannel: 10, watch: "poll", pollIntervalMs: 100 };
let engine: EventScheduler | undefined;
afterEach(async () => {
  await engine?.stop();
  engine = undefined;
});

function startEngine(f: Fixture, over: Partial<SchedulerSettings> = {}) {
  const published: ChannelMessage[] = [];
  engine = new EventScheduler({
    eventsDir: join(f.workspaceDir, "events"),
    channelsDir: join(f.workspaceDir, "channels"),
    settings: { ...settings, ...over },
    context: { adapters: new Set(["cli"]) },
    publish: async (_ref, m) => {
      published.push(m);
      return { duplicate: false };
    },
    log: pino({ level: "silent" }),
    clock: new FakeClock(Date.now()),
    settleMs: 20,
  });
  return { engine, published };
}

async function waitFor(pred: () => boolean, what: string) {
  const deadline = Date.now() + 5000;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("what create accepts, the scheduler schedules when create said", () => {
  it("one-shots and periodic events in several zones", async () => {
    const f = fixture();
    const inputs = [
      { text: "stand-up", at: localDay(1, "09:00", "Europe/Vienna"), timezone: "Europe/Vienna" },
      { text: "late call", at: localDay(2, "23:45", "America/Los_Angeles"), timezone: "America/Los_Angeles" },
      { text: "offset", at: `${localDay(3, "06:00", "UTC")}:00+05:30` },
      { text: "weekdays", schedule: "0 9 * * 1-5", timezone: "Europe/Vienna" },
      { text: "night", schedule: "30 2 * * *", timezone: "Europe/Vienna" },
      { text: "monthly", schedule: "0 0 1 * *", timezone: "Asia/Kolkata" },
      { text: "daily", schedule: "@daily", timezone: "UTC" },
      { text: "seconds field", schedule: "0 0 12 * * 0", timezone: "Australia/Lord_Howe" },
    ];
    const created: Array<Record<string, unknown>> = [];
    for (const input of inputs) created.push((await f.call(CREATE, input)).details);
    const { engine } = startEngine(f);
    await engine.start();
    const scheduled = new Map(engine.scheduled().map((s) => [s.file, s]));
    for (const c of created) {
      expect(scheduled.get(`channels/cli/local/events/${c.id}.json`)).toEqual({ file: `channels/cli/local/events/${c.id}.json`, type: c.type, channel: "cli/local", next: c.next });
    }
    expect(scheduled.size).toBe(inputs.length);
  });
});

describe("what create refuses, the scheduler refuses for the same reason", () => {
  it("bad cron, a cron that never fires, an unknown zone, empty text, a bad date", async () => {
    const f = fixture();
    const cases = [
      { type: "periodic", text: "x", schedule: "0 9 * *", timezone: "UTC" },
      { type: "periodic", text: "x", schedule: "0 0 30 2 *", timezone: "UTC" },
      { type: "periodic", text: "x", schedule: "61 * * * *", timezone: "UTC" },
      { type: "periodic", text: "x", schedule: "0 9 * * *", timezone: "Europe/Wien" },
      { type: "periodic", text: "   ", schedule: "0 9 * * *", timezone: "UTC" },
      { type: "one-shot", text: "x", at: "noon" },
      { type: "one-shot", text: "x", at: "2026-13-01T09:00:00+01:00" },
    ];
    const toolReasons: string[] = [];
    for (const { type: _type, ...args } of cases) {
      toolReasons.push(await f.call(CREATE, args).then(() => "accepted", (err: Error) => err.message));
    }
    expect(f.eventFiles()).toEqual([]);
    // The same events written by hand, as the model could with `write`.
    mkdirSync(f.eventsDir());
    cases.forEach((c, i) => writeFileSync(join(f.eventsDir(), `case${i}.json`), JSON.stringify(c)));
    const { engine } = startEngine(f);
    await engine.start();
    const note = (i: number) => join(f.eventsDir(), "invalid", `case${i}.json.error`);
    await waitFor(() => cases.every((_, i) => existsSync(note(i))), "the scheduler to move every case to events/invalid/");
    const schedulerReasons = cases.map((_, i) => readFileSync(note(i), "utf8").split("\n")[0]);
    expect(toolReasons).toEqual(schedulerReasons);
    expect(engine.scheduled()).toEqual([]);
  });

  it("a full queue: create refuses the event the scheduler would move to invalid/", async () => {
    const f = fixture({ config: { scheduler: { maxQueuedPerChannel: 2 } } });
    await f.call(CREATE, { text: "one", schedule: "0 9 * * *", timezone: "UTC" });
    await f.call(CREATE, { text: "two", schedule: "0 10 * * *", timezone: "UTC" });
    await expect(f.call(CREATE, { text: "three", schedule: "0 11 * * *", timezone: "UTC" })).rejects.toThrow(/already has 2 scheduled events/);
    writeFileSync(join(f.eventsDir(), "zz-three.json"), JSON.stringify({ type: "periodic", text: "three", schedule: "0 11 * * *", timezone: "UTC" }));
    const { engine } = startEngine(f, { maxQueuedPerChannel: 2 });
    await engine.start();
    expect(engine.scheduled().length).toBe(2);
    expect(readFileSync(join(f.eventsDir(), "invalid", "zz-three.json.error"), "utf8")).toMatch(/^too many scheduled events for cli\/local: it already has 2 \(limit 2/);
  });

  it("a past one-shot: create refuses it; the scheduler would not fire it at its time either (missed/ beyond the grace period)", async () => {
    const f = fixture();
    const at = new Date(Date.now() - 2 * 86_400_000).toISOString();
    await expect(f.call(CREATE, { text: "x", at })).rejects.toThrow(/is in the past/);
    mkdirSync(f.eventsDir());
    writeFileSync(join(f.eventsDir(), "past.json"), JSON.stringify({ type: "one-shot", text: "x", at }));
    const { engine, published } = startEngine(f);
    await engine.start();
    expect(existsSync(join(f.eventsDir(), "missed", "past.json"))).toBe(true);
    expect(engine.scheduled()).toEqual([]);
    expect(published.every((m) => !m.text.startsWith("[EVENT:past.json:one-shot"))).toBe(true);
  });
});
