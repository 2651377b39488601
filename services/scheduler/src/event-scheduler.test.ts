import { afterEach, describe, expect, it } from "@jest/globals";
import type { ChannelMessage } from "@mom/contracts";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { FakeClock } from "./clock.js";
import { EventScheduler, type SchedulerSettings } from "./event-scheduler.js";
import { T0, waitFor } from "./test-support/harness.js";

// The engine alone, with a publisher the test controls (NATS refusing, then accepting).
const settings: SchedulerSettings = { graceMinutes: 60, maxQueuedPerChannel: 100, maxPerMinutePerChannel: 10, watch: "poll", pollIntervalMs: 100 };
let dir: string;
let engine: EventScheduler | undefined;
afterEach(async () => {
  await engine?.stop();
  engine = undefined;
  rmSync(dir, { recursive: true, force: true });
});

function setup(publish: (m: ChannelMessage) => Promise<{ duplicate: boolean }>) {
  dir = mkdtempSync(join(tmpdir(), "mom-engine-"));
  const logs: Record<string, unknown>[] = [];
  const clock = new FakeClock(T0);
  engine = new EventScheduler({
    eventsDir: dir,
    settings,
    context: { adapters: new Set(["cli"]) },
    publish: (_ref, m) => publish(m),
    log: pino({ level: "debug" }, { write: (s: string) => void logs.push(JSON.parse(s)) }),
    clock,
    settleMs: 100,
    retryMs: 1000,
  });
  return { engine, clock, logs, write: (name: string, o: object) => writeFileSync(join(dir, name), JSON.stringify(o)) };
}

describe("EventScheduler when NATS refuses", () => {
  it("retries a one-shot with the same msg-id until it is published, marked late once a minute has passed", async () => {
    const attempts: ChannelMessage[] = [];
    let up = false;
    const { engine, clock, write, logs } = setup(async (m) => {
      attempts.push(m);
      if (!up) throw new Error("no responders");
      return { duplicate: false };
    });
    await engine.start();
    write("r.json", { type: "one-shot", channelId: "cli/local", text: "ping", at: "2026-01-05T08:00:30Z" });
    await engine.rescan();
    clock.set(T0 + 30_000);
    await waitFor(() => attempts.length === 1, 2000, "the first attempt");
    for (let i = 1; i <= 65; i++) {
      clock.advance(1000);
      await engine.idle();
    }
    up = true;
    clock.advance(1000);
    await waitFor(() => !existsSync(join(dir, "r.json")), 2000, "the published file to be deleted");
    expect(new Set(attempts.map((a) => a.id))).toEqual(new Set(["r.json@2026-01-05T08:00:30.000Z"]));
    expect(attempts.length).toBeGreaterThan(60);
    expect(attempts.at(-1)!.text).toBe("[EVENT:r.json:one-shot:2026-01-05T08:00:30Z] [late by 1 minute] ping");
    expect(logs.filter((l) => l.msg === "could not publish the event; will retry").length).toBe(attempts.length - 1);
  });

  // A stream leader's election refuses every replica's publish alike for seconds: a tick given up
  // then would be lost, not fired by another replica (test/chaos/scheduler-chaos.test.ts).
  it("retries a periodic tick until it is published, then fires the ticks that fell due meanwhile, in order", async () => {
    const ids: string[] = [];
    const published: string[] = [];
    let up = false;
    const { engine, clock, write } = setup(async (m) => {
      ids.push(m.id);
      if (!up) throw new Error("no responders");
      published.push(m.id);
      return { duplicate: false };
    });
    await engine.start();
    write("p.json", { type: "periodic", channelId: "cli/local", text: "tick", schedule: "*/2 * * * * *", timezone: "UTC" });
    await engine.rescan();
    clock.set(T0 + 2000);
    await waitFor(() => ids.length === 1, 2000, "the first attempt");
    for (let i = 0; i < 2; i++) {
      clock.advance(1000); // 08:00:03, 08:00:04: 08:00:02 again (08:00:04 waits for it)
      await engine.idle();
    }
    up = true;
    clock.advance(1000); // 08:00:05: 08:00:02 goes through, then 08:00:04
    await waitFor(() => published.length === 2, 2000, "the tick that fell due meanwhile");
    clock.advance(1000);
    await waitFor(() => published.length === 3, 2000, "the next tick on time");
    const t = (s: string) => `p.json@2026-01-05T08:00:0${s}.000Z`;
    expect(ids).toEqual([t("2"), t("2"), t("2"), t("2"), t("4"), t("6")]);
    expect(published).toEqual([t("2"), t("4"), t("6")]);
  });

  it("skips a periodic tick that could not be published for over a minute, and carries on from now", async () => {
    const ids: string[] = [];
    const published: string[] = [];
    let up = false;
    const { engine, clock, write, logs } = setup(async (m) => {
      ids.push(m.id);
      if (!up) throw new Error("no responders");
      published.push(m.id);
      return { duplicate: false };
    });
    await engine.start();
    write("p.json", { type: "periodic", channelId: "cli/local", text: "tick", schedule: "*/2 * * * * *", timezone: "UTC" });
    await engine.rescan();
    clock.set(T0 + 2000);
    await waitFor(() => ids.length === 1, 2000, "the first attempt");
    for (let i = 0; i < 62; i++) {
      clock.advance(1000); // 08:01:03: 08:00:02 is 61 s overdue and skipped; 08:01:04 is tried next
      await engine.idle();
    }
    up = true;
    clock.advance(1000);
    await waitFor(() => published.length === 1, 2000, "the retried tick after the skip");
    clock.advance(1000);
    await waitFor(() => published.length === 2, 2000, "the next tick");
    expect(new Set(ids)).toEqual(new Set(["p.json@2026-01-05T08:00:02.000Z", "p.json@2026-01-05T08:01:04.000Z", "p.json@2026-01-05T08:01:06.000Z"]));
    expect(published).toEqual(["p.json@2026-01-05T08:01:04.000Z", "p.json@2026-01-05T08:01:06.000Z"]);
    expect(logs.filter((l) => String(l.msg).startsWith("tick skipped:")).map((l) => l.tick)).toEqual(["2026-01-05T08:00:02.000Z"]);
  });
});

describe("EventScheduler on a file system that refuses", () => {
  it("leaves a bad file it cannot move where it is, says so once, and picks it up again when it changes", async () => {
    const { engine, write, logs } = setup(async () => ({ duplicate: false }));
    await engine.start();
    writeFileSync(join(dir, "invalid"), "a file where the directory should be"); // mkdir fails, even for root
    write("bad.json", { type: "sometimes", channelId: "cli/local", text: "x" });
    await engine.rescan();
    await waitFor(() => logs.some((l) => String(l.msg).startsWith("cannot move the event file")), 3000, "the error");
    await new Promise((r) => setTimeout(r, 500)); // several polls and settle periods
    expect(logs.filter((l) => String(l.msg).startsWith("cannot move the event file"))).toHaveLength(1);
    expect(existsSync(join(dir, "bad.json"))).toBe(true);
    rmSync(join(dir, "invalid"));
    write("bad.json", { type: "immediate", channelId: "cli/local", text: "fixed" });
    await waitFor(() => !existsSync(join(dir, "bad.json")), 3000, "the fixed file to fire and go");
  });
});
