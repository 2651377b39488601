import { afterAll, afterEach, describe, expect, it } from "@jest/globals";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { harness, type Harness, sleep, stopNats, T0, waitFor } from "./test-support/harness.js";

// The scheduler service against a real NATS and real files; wall time is a FakeClock, so "fires at
// 09:05" is checked by moving the clock, not by waiting.
let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});
afterAll(stopNats);

async function setup(...args: Parameters<typeof harness>): Promise<Harness> {
  h = await harness(...args);
  return h;
}
const min = 60_000;
const local = { channelId: "cli/local" };
const texts = (ms: Array<{ text: string }>) => ms.map((m) => m.text);

describe("firing", () => {
  it("an immediate event fires at once as a scheduler message, then its file is deleted", async () => {
    const s = await setup();
    await s.start();
    s.write("deploy.json", { type: "immediate", ...local, text: "New deploy finished" });
    const [m] = await s.waitForInbound(1);
    expect(m!.subject).toBe(s.bus.subjects.channel("in", { adapter: "cli", channelId: "local" }));
    expect(m).toMatchObject({
      channelId: "local",
      sender: { id: "scheduler", username: "scheduler", isBot: true },
      text: "[EVENT:deploy.json:immediate:immediate] New deploy finished",
      isMention: true,
      attachments: [],
      metadata: { event: { file: "deploy.json", type: "immediate" } },
    });
    expect(m!.id).toMatch(/^deploy\.json@\d{4}-\d\d-\d\dT/);
    await waitFor(() => !existsSync(join(s.eventsDir, "deploy.json")), 3000, "the fired file to be deleted");

    // The same name written again is a new event (a new modification time, a new msg-id).
    await sleep(20);
    s.write("deploy.json", { type: "immediate", ...local, text: "Another deploy finished" });
    const all = await s.waitForInbound(2);
    expect(all[1]!.text).toContain("Another deploy finished");
    expect(all[1]!.id).not.toBe(all[0]!.id);
  });

  it("a one-shot fires at its time and not before, then its file is deleted", async () => {
    const s = await setup();
    await s.start();
    s.write("remind.json", { type: "one-shot", ...local, text: "Remind @mario about the review", at: "2026-01-05T09:30:00+01:00" });
    await s.settle();
    expect(s.sched!.scheduler.scheduled()).toEqual([{ file: "remind.json", type: "one-shot", channel: "cli/local", next: "2026-01-05T08:30:00.000Z" }]);
    s.clock.set(T0 + 29 * min + 59_000);
    await s.settle();
    expect(await s.inbound()).toHaveLength(0);
    s.clock.set(T0 + 30 * min);
    const [m] = await s.waitForInbound(1);
    expect(m).toMatchObject({
      id: "remind.json@2026-01-05T08:30:00.000Z",
      text: "[EVENT:remind.json:one-shot:2026-01-05T09:30:00+01:00] Remind @mario about the review",
      metadata: { event: { type: "one-shot", at: "2026-01-05T09:30:00+01:00", firedAt: "2026-01-05T08:30:00.000Z" } },
    });
    expect(m!.metadata!.event).not.toHaveProperty("late");
    await waitFor(() => !existsSync(join(s.eventsDir, "remind.json")), 3000, "the fired file to be deleted");
  });

  it("a periodic event fires on every tick in its time zone, keeps its file, and does not replay missed ticks", async () => {
    const s = await setup();
    await s.start();
    s.write("standup.json", { type: "periodic", ...local, text: "Summarise open issues", schedule: "*/5 9 * * 1-5", timezone: "Europe/Vienna" });
    await s.settle();
    expect(s.sched!.scheduler.scheduled()[0]!.next).toBe("2026-01-05T08:05:00.000Z"); // 09:05 in Vienna
    s.clock.set(T0 + 5 * min);
    await s.waitForInbound(1);
    s.clock.set(T0 + 10 * min);
    await s.waitForInbound(2);
    // The process stalls for 40 minutes: the ticks in between are not replayed.
    s.clock.set(T0 + 50 * min + 30_000);
    await s.settle();
    expect(s.sched!.scheduler.scheduled()[0]!.next).toBe("2026-01-05T08:55:00.000Z");
    s.clock.set(T0 + 55 * min);
    const all = await s.waitForInbound(3);
    expect(all.map((m) => m.id)).toEqual(["standup.json@2026-01-05T08:05:00.000Z", "standup.json@2026-01-05T08:10:00.000Z", "standup.json@2026-01-05T08:55:00.000Z"]);
    expect(all[0]).toMatchObject({
      text: "[EVENT:standup.json:periodic:*/5 9 * * 1-5] Summarise open issues",
      metadata: { event: { type: "periodic", schedule: "*/5 9 * * 1-5", timezone: "Europe/Vienna" } },
    });
    // 10:00 Vienna is outside the hour: the next tick is Tuesday 09:00.
    expect(s.sched!.scheduler.scheduled()[0]!.next).toBe("2026-01-06T08:00:00.000Z");
    expect(existsSync(join(s.eventsDir, "standup.json"))).toBe(true);
    expect(s.logs.some((l) => String(l.msg).startsWith("tick skipped: 35 minutes overdue (periodic events do not replay missed ticks)"))).toBe(true);
  });

  it("editing a file reschedules it, deleting it cancels it", async () => {
    const s = await setup();
    await s.start();
    s.write("a.json", { type: "one-shot", ...local, text: "first", at: "2026-01-05T08:10:00Z" });
    s.write("b.json", { type: "periodic", ...local, text: "tick", schedule: "0 * * * *", timezone: "UTC" });
    await s.settle();
    s.write("a.json", { type: "one-shot", ...local, text: "moved", at: "2026-01-05T08:20:00Z" });
    rmSync(join(s.eventsDir, "b.json"));
    await s.settle();
    expect(s.sched!.scheduler.scheduled()).toEqual([{ file: "a.json", type: "one-shot", channel: "cli/local", next: "2026-01-05T08:20:00.000Z" }]);
    s.clock.set(T0 + 15 * min);
    await s.settle();
    expect(await s.inbound()).toHaveLength(0);
    s.clock.set(T0 + 2 * 60 * min);
    const all = await s.waitForInbound(1);
    await sleep(200);
    expect(texts(await s.inbound())).toEqual([expect.stringContaining("] moved")]);
    expect(all[0]!.id).toBe("a.json@2026-01-05T08:20:00.000Z");
    expect(s.logs.some((l) => l.msg === "event rescheduled" && l.file === "a.json")).toBe(true);
    expect(s.logs.some((l) => l.msg === "event cancelled (file deleted)" && l.file === "b.json")).toBe(true);
  });

  it("a write in progress is waited out; a file that stays broken is judged only once it has settled", async () => {
    const s = await setup({}, { settleMs: 1000 });
    await s.start();
    const full = JSON.stringify({ type: "immediate", ...local, text: "written in two parts" });
    s.write("slow.json", full.slice(0, 20));
    await s.settle();
    await sleep(100);
    s.write("slow.json", full);
    await s.waitForInbound(1);
    expect(existsSync(join(s.eventsDir, "invalid"))).toBe(false);

    s.write("broken.json", '{"type": "immediate", "chan');
    await s.settle();
    await sleep(300);
    expect(existsSync(join(s.eventsDir, "broken.json"))).toBe(true); // not judged yet
    await waitFor(() => existsSync(join(s.eventsDir, "invalid", "broken.json")), 3000, "broken.json in invalid/");
  });

  it("notices files by itself: notifications, and polling alone", async () => {
    for (const watch of ["events", "poll"] as const) {
      const s = await setup({ watch, pollIntervalMs: 150 });
      await s.start();
      s.write(`${watch}.json`, { type: "immediate", ...local, text: watch });
      await s.waitForInbound(1);
      expect(s.logs.find((l) => l.msg === "scheduler ready")).toMatchObject({ watch, pollIntervalMs: 150 });
      await s.stop();
      h = undefined;
    }
  });
});

describe("bad input", () => {
  it("moves each bad file to invalid/ with a note, logs it, reports it in its channel when known, and keeps going", async () => {
    const s = await setup();
    await s.start();
    const bad: Record<string, [unknown, RegExp, boolean]> = {
      "json.json": ['{"type": "immediate", "channelId": "cli/local", "text": "x"', /^invalid JSON/, false],
      "type.json": [{ type: "weekly", ...local, text: "x" }, /^unknown type "weekly"/, true],
      "date.json": [{ type: "one-shot", ...local, text: "x", at: "next tuesday" }, /^bad date/, true],
      "cron.json": [{ type: "periodic", ...local, text: "x", schedule: "0 9 * *", timezone: "UTC" }, /^bad cron "0 9 \* \*"/, true],
      "tz.json": [{ type: "periodic", ...local, text: "x", schedule: "0 9 * * *", timezone: "Europe/Wien" }, /^unknown time zone "Europe\/Wien"/, true],
      "adapter.json": [{ type: "immediate", channelId: "discord/123", text: "x" }, /^unknown adapter "discord"/, false],
      "other.json": [{ type: "one-shot", channelId: "term/C1", text: "x", at: "2026-01-05" }, /^bad date/, true],
    };
    for (const [name, [content]] of Object.entries(bad)) s.write(name, content);
    await s.settle();
    const invalid = join(s.eventsDir, "invalid");
    await waitFor(() => Object.keys(bad).every((n) => existsSync(join(invalid, n)) && existsSync(join(invalid, `${n}.error`))), 5000, "all bad files in invalid/");
    for (const [name, [, reason]] of Object.entries(bad)) {
      expect(existsSync(join(s.eventsDir, name))).toBe(false);
      const note = readFileSync(join(invalid, `${name}.error`), "utf8");
      expect(note.split("\n")[0]).toMatch(reason);
      expect(note).toContain(`moved this file here from events/${name}`);
      expect(s.logs.find((l) => l.file === name && l.level === 40 && String(l.msg).startsWith("invalid event file"))).toBeDefined();
    }
    // Reports: one message per channel (they waited together), naming only the files whose channel is known.
    await s.waitForInbound(2);
    await sleep(200);
    const msgs = await s.inbound();
    const byChannel = (ch: string) => msgs.filter((m) => m.channelId === ch).map((m) => m.text).join("\n");
    for (const [name, [, , known]] of Object.entries(bad)) {
      const channel = name === "other.json" ? "C1" : "local";
      if (known) expect(byChannel(channel)).toContain(`events/${name} was rejected`);
      else expect(msgs.some((m) => m.text.includes(`events/${name}`))).toBe(false);
    }
    expect(byChannel("C1")).toContain("events/invalid/other.json");
    expect(msgs.every((m) => m.isMention && m.sender.id === "scheduler")).toBe(true);
    expect(msgs.find((m) => m.channelId === "local")!.text).toMatch(/Tell the people in this channel.*write a corrected one/s);

    // Still running: a good file fires, and a second bad file of the same name gets a fresh name.
    s.write("type.json", { type: "nope", ...local, text: "x" });
    s.write("good.json", { type: "immediate", ...local, text: "still here" });
    await waitFor(async () => (await s.inbound()).some((m) => m.text.includes("still here")), 5000, "the good event");
    await waitFor(() => existsSync(join(invalid, "type-2.json.error")), 5000, "type-2.json");
  });

  it("fires into a channel of a configured adapter that has no directory yet", async () => {
    const s = await setup();
    await s.start();
    s.write("first.json", { type: "immediate", channelId: "cli/brand-new", text: "hello, new channel" });
    const [m] = await s.waitForInbound(1);
    expect(m).toMatchObject({ channelId: "brand-new", isMention: true });
    expect(m!.text).toContain("hello, new channel");
    expect(existsSync(join(s.eventsDir, "invalid"))).toBe(false);
  });

  it("a file whose name has a newline is moved aside under a printable name and reported in its channel", async () => {
    const s = await setup();
    await s.start();
    s.write("stand\nup.json", { type: "immediate", ...local, text: "x" });
    await s.settle();
    const moved = join(s.eventsDir, "invalid", "stand\\x0aup.json");
    await waitFor(() => existsSync(`${moved}.error`), 3000, "the file moved aside");
    expect(existsSync(join(s.eventsDir, "stand\nup.json"))).toBe(false);
    expect(readFileSync(`${moved}.error`, "utf8").split("\n")[0]).toBe('the file name "stand\\nup.json" has control characters (a newline, a tab…); name event files with printable characters');
    await s.waitForInbound(1);
    expect((await s.inbound())[0]!.text).toContain("events/stand\\x0aup.json was rejected");
  });

  it("a file too large to be an event is rejected", async () => {
    const s = await setup();
    await s.start();
    s.write("huge.json", JSON.stringify({ type: "immediate", ...local, text: "x".repeat(70_000) }));
    await s.settle();
    await waitFor(() => existsSync(join(s.eventsDir, "invalid", "huge.json.error")), 3000, "huge.json rejected");
    expect(readFileSync(join(s.eventsDir, "invalid", "huge.json.error"), "utf8")).toMatch(/^too large: \d+ bytes/);
  });
});

describe("downtime", () => {
  it("a one-shot missed while no scheduler ran fires late within the grace period; an older one goes to missed/ and is reported", async () => {
    const s = await setup({ graceMinutes: 60 });
    // Written while the scheduler was down; it starts at T0 (09:00 in Vienna).
    s.write("recent.json", { type: "one-shot", ...local, text: "Stand-up in 5", at: "2026-01-05T08:48:00+01:00" });
    s.write("old.json", { type: "one-shot", ...local, text: "Call ana", at: "2026-01-05T06:00:00+01:00" });
    await s.start();
    const msgs = await s.waitForInbound(2);
    const late = msgs.find((m) => m.id.startsWith("recent.json"))!;
    expect(late).toMatchObject({
      id: "recent.json@2026-01-05T07:48:00.000Z",
      text: "[EVENT:recent.json:one-shot:2026-01-05T08:48:00+01:00] [late by 12 minutes] Stand-up in 5",
      metadata: { event: { late: true, lateMinutes: 12, firedAt: "2026-01-05T08:00:00.000Z" } },
    });
    const report = msgs.find((m) => m.id.startsWith("old.json"))!;
    expect(report.text).toMatch(/^\[EVENT:old\.json:missed:2026-01-05T06:00:00\+01:00\] A scheduled event was missed:/);
    expect(report.text).toContain("due at 2026-01-05T06:00:00+01:00, 3 h before the scheduler saw it, which is more than the grace period of 60 minutes");
    expect(report.text).toContain('Its text was: "Call ana"');
    expect(existsSync(join(s.eventsDir, "missed", "old.json"))).toBe(true);
    expect(readFileSync(join(s.eventsDir, "missed", "old.json.error"), "utf8")).toMatch(/^missed: it was due at/);
    await waitFor(() => readdirSync(s.eventsDir).filter((f) => f.endsWith(".json")).length === 0, 3000, "events/ to be empty");
  });

  it("periodic events start from the next tick after a restart", async () => {
    const s = await setup();
    s.write("hourly.json", { type: "periodic", ...local, text: "tick", schedule: "0 * * * *", timezone: "UTC" }, T0 - 5 * 60 * min);
    await s.start();
    await s.settle();
    expect(s.sched!.scheduler.scheduled()[0]!.next).toBe("2026-01-05T09:00:00.000Z");
    expect(await s.inbound()).toHaveLength(0);
  });
});

describe("limits", () => {
  it("a channel holds at most maxQueuedPerChannel events; the oldest files win", async () => {
    const s = await setup({ maxQueuedPerChannel: 2 });
    for (const [i, name] of ["c.json", "a.json", "b.json"].entries()) {
      s.write(name, { type: "one-shot", ...local, text: name, at: "2026-01-06T09:00:00Z" }, Date.now() - 10_000 + i * 1000);
    }
    s.write("other.json", { type: "one-shot", channelId: "term/C1", text: "other channel", at: "2026-01-06T09:00:00Z" });
    await s.start();
    expect(s.sched!.scheduler.scheduled().map((e) => e.file)).toEqual(["a.json", "c.json", "other.json"]);
    expect(readFileSync(join(s.eventsDir, "invalid", "b.json.error"), "utf8")).toMatch(/^too many scheduled events for cli\/local: it already has 2 \(limit 2, scheduler.maxQueuedPerChannel\)/);
    const [report] = await s.waitForInbound(1);
    expect(report!.text).toContain("events/b.json was rejected: too many scheduled events");
  });

  it("a channel gets at most maxPerMinutePerChannel messages a minute: immediates wait, periodic ticks are skipped", async () => {
    const s = await setup({ maxPerMinutePerChannel: 2 });
    await s.start();
    for (const n of [1, 2, 3, 4]) s.write(`now-${n}.json`, { type: "immediate", ...local, text: `flood ${n}` }, Date.now() - 10_000 + n * 1000);
    await s.settle();
    await s.waitForInbound(2);
    await sleep(300);
    expect(texts(await s.inbound())).toEqual([expect.stringContaining("flood 1"), expect.stringContaining("flood 2")]);
    expect(readdirSync(s.eventsDir).filter((f) => f.startsWith("now-")).sort()).toEqual(["now-3.json", "now-4.json"]);
    expect(s.logs.some((l) => String(l.msg).startsWith("event deferred: cli/local reached 2 messages per minute"))).toBe(true);
    s.clock.advance(60_000);
    await s.waitForInbound(4);
    // Another channel has its own budget.
    s.write("elsewhere.json", { type: "immediate", channelId: "term/C1", text: "own budget" });
    await waitFor(async () => (await s.inbound()).some((m) => m.channelId === "C1"), 3000, "the other channel's event");

    // A periodic tick over budget is skipped, not queued.
    // It is 08:01:00 and cli/local's budget was spent at 08:01:00; the tick at 08:01:30 finds it spent.
    s.write("every-minute.json", { type: "periodic", ...local, text: "tick", schedule: "30 * * * * *", timezone: "UTC" });
    await s.settle();
    expect(s.sched!.scheduler.scheduled().find((e) => e.file === "every-minute.json")!.next).toBe("2026-01-05T08:01:30.000Z");
    s.clock.advance(30_000);
    await s.settle();
    await sleep(200);
    const ticks = (await s.inbound()).filter((m) => m.id.startsWith("every-minute.json"));
    expect(ticks).toHaveLength(0);
    expect(s.logs.some((l) => String(l.msg).startsWith("tick skipped: cli/local reached 2 messages per minute"))).toBe(true);
    expect(s.sched!.scheduler.scheduled().find((e) => e.file === "every-minute.json")!.next).toBe("2026-01-05T08:02:30.000Z");
  });
});
