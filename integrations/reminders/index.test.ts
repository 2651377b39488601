import { afterAll, describe, expect, it } from "@jest/globals";
import { CronSchedule } from "@mom/events";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DateTime } from "luxon";
import { cleanup, fixture, localDay } from "./src/test-support.js";

afterAll(cleanup);

const CREATE = "reminders.event.create";
const LIST = "reminders.event.list";
const CANCEL = "reminders.event.cancel";

describe("the tools", () => {
  it("are three, with the contract's ids and risks", () => {
    const f = fixture();
    expect([...f.tools.values()].map((t) => [t.id, t.risk])).toEqual([
      [CREATE, "write"],
      [LIST, "read"],
      [CANCEL, "destructive"],
    ]);
  });
});

describe("reminders.event.create", () => {
  it("a one-shot at a local time in a zone: the file the scheduler reads, its id and next fire time", async () => {
    const f = fixture();
    const at = localDay(1, "09:00", "Europe/Vienna");
    const { text, details } = await f.call(CREATE, { text: "Remind @ana about the stand-up", at, timezone: "Europe/Vienna" });
    const expected = DateTime.fromISO(at, { zone: "Europe/Vienna" });
    expect(details).toMatchObject({ type: "one-shot", channel: "cli/local", at: expected.toISO({ suppressMilliseconds: true }), timezone: "Europe/Vienna", next: expected.toUTC().toISO() });
    const id = details.id as string;
    expect(id).toMatch(/^remind-ana-about-the-[0-9a-f]{6}$/);
    expect(f.eventFiles()).toEqual([`${id}.json`]);
    expect(JSON.parse(readFileSync(join(f.eventsDir(), `${id}.json`), "utf8"))).toEqual({
      type: "one-shot",
      channelId: "cli/local",
      text: "Remind @ana about the stand-up",
      at: details.at,
      timezone: "Europe/Vienna",
    });
    expect(text).toContain(`id "${id}"`);
    expect(text).toMatch(/Fires: \w{3}, \d+ \w{3} \d{4}, 09:00 (CET|CEST|GMT\+\d) \(in \d+ h/);
    expect(text).toContain(`[EVENT:${id}.json:one-shot:${details.at}]`);
    // No temp file is left behind.
    expect(f.eventFiles().length).toBe(1);
  });

  it("an `at` with an offset is kept as written and shown in that offset; Z is UTC", async () => {
    const f = fixture();
    const when = new Date(Date.now() + 3 * 86_400_000);
    const at = `${when.toISOString().slice(0, 10)}T18:30:00+05:30`;
    const { details } = await f.call(CREATE, { text: "call", at, id: "call-1" });
    expect(details).toMatchObject({ id: "call-1", at, timezone: "+05:30", next: new Date(Date.parse(at)).toISOString() });
    expect(JSON.parse(readFileSync(join(f.eventsDir(), "call-1.json"), "utf8"))).not.toHaveProperty("timezone");
    const z = `${when.toISOString().slice(0, 10)}T18:30:00Z`;
    expect((await f.call(CREATE, { text: "call", at: z })).details).toMatchObject({ at: z, timezone: "UTC" });
  });

  it("a periodic one: its next tick, as the scheduler computes it", async () => {
    const f = fixture();
    const { details, text } = await f.call(CREATE, { text: "Summarise open issues", schedule: "0 9 * * 1-5", timezone: "America/New_York" });
    const next = new CronSchedule("0 9 * * 1-5", "America/New_York").nextAfter(new Date())!;
    expect(details).toMatchObject({ type: "periodic", schedule: "0 9 * * 1-5", timezone: "America/New_York", next: next.toISOString() });
    expect(text).toContain(`periodic reminder "0 9 * * 1-5" (America/New_York)`);
    expect(JSON.parse(readFileSync(join(f.eventsDir(), `${details.id}.json`), "utf8"))).toEqual({
      type: "periodic",
      channelId: "cli/local",
      text: "Summarise open issues",
      schedule: "0 9 * * 1-5",
      timezone: "America/New_York",
    });
  });

  it("a time without a zone is in tools.settings.reminders.timezone (else the host's)", async () => {
    const f = fixture({ settings: { reminders: { timezone: "Asia/Tokyo" } } });
    const at = localDay(2, "07:15", "Asia/Tokyo");
    expect((await f.call(CREATE, { text: "tea", at })).details).toMatchObject({ timezone: "Asia/Tokyo", next: DateTime.fromISO(at, { zone: "Asia/Tokyo" }).toUTC().toISO() });
    const host = Intl.DateTimeFormat().resolvedOptions().timeZone;
    expect((await fixture().call(CREATE, { text: "tea", schedule: "0 7 * * *" })).details).toMatchObject({ timezone: host });
  });

  it("wrong settings fail naming the field", async () => {
    await expect(fixture({ settings: { reminders: { timezone: "Mars/Olympus" } } }).call(CREATE, { text: "x", schedule: "0 7 * * *" })).rejects.toThrow(
      'config.json tools.settings.reminders.timezone: unknown time zone "Mars/Olympus"',
    );
    await expect(fixture({ settings: { reminders: { zone: "UTC" } } }).call(CREATE, { text: "x", schedule: "0 7 * * *" })).rejects.toThrow(/tools\.settings\.reminders/);
  });

  it("refuses what the scheduler would not fire as asked, with a reason to act on, and writes nothing", async () => {
    const f = fixture();
    const future = localDay(1, "09:00", "UTC");
    const cases: Array<[object, string | RegExp]> = [
      [{ text: "x", at: "2020-01-01T09:00:00+01:00" }, /^"at" "2020-01-01T09:00:00\+01:00" is in the past \(now is .*\); give a future time$/],
      [{ text: "x", at: new Date(Date.now() - 1000).toISOString() }, /is in the past/],
      [{ text: "x", at: future, schedule: "0 9 * * *", timezone: "UTC" }, /either "at" .* or "schedule" .* not both/],
      [{ text: "x" }, /^say when: "at" for a one-shot reminder/],
      [{ text: "x", at: "  ", schedule: "" }, /^say when/],
      [{ text: "   ", at: future, timezone: "UTC" }, '"text" must be a non-empty string, got "   "'],
      [{ text: "", schedule: "0 9 * * *" }, '"text" must be a non-empty string, got ""'],
      [{ text: "x", at: "tomorrow at 9" }, 'bad date: "at" is "tomorrow at 9", expected an ISO 8601 date-time with an offset'],
      [{ text: "x", at: "2026-02-30T09:00", timezone: "UTC" }, /^bad date: "at" is "2026-02-30T09:00"/],
      [{ text: "x", at: "2027-03-28T02:30", timezone: "Europe/Vienna" }, "2027-03-28T02:30 does not exist in Europe/Vienna (the clocks skip it that day); give another time, e.g. 2027-03-28T03:30"],
      [{ text: "x", at: future, timezone: "Europe/Wien" }, 'unknown time zone "Europe/Wien" (expected an IANA name like "Europe/Vienna" or "UTC")'],
      [{ text: "x", schedule: "0 9 * *", timezone: "UTC" }, /^bad cron "0 9 \* \*": /],
      [{ text: "x", schedule: "0 0 30 2 *", timezone: "UTC" }, 'bad cron "0 0 30 2 *": it never fires'],
      [{ text: "x", schedule: "every day", timezone: "UTC" }, /^bad cron "every day"/],
      [{ text: "x".repeat(70_000), at: future, timezone: "UTC" }, /^too large: \d+ bytes \(an event file has at most 65536 bytes\); shorten "text"$/],
      [{ text: "x", at: future, timezone: "UTC", id: "../other/events/x" }, /^"id" "..\/other\/events\/x" is not usable/],
      [{ text: "x", at: future, timezone: "UTC", id: ".hidden" }, /is not usable/],
    ];
    for (const [args, message] of cases) {
      await expect(f.call(CREATE, args)).rejects.toThrow(message);
    }
    expect(existsSync(f.eventsDir())).toBe(false);
    expect(f.eventFiles("cli/other")).toEqual([]);
  });

  it("never replaces an event: a given id that exists is an error", async () => {
    const f = fixture();
    await f.call(CREATE, { text: "first", schedule: "0 9 * * *", timezone: "UTC", id: "standup" });
    await expect(f.call(CREATE, { text: "second", schedule: "0 10 * * *", timezone: "UTC", id: "standup.json" })).rejects.toThrow(
      'an event with id "standup" already exists in this channel; choose another id, or cancel that one first',
    );
    expect(JSON.parse(readFileSync(join(f.eventsDir(), "standup.json"), "utf8")).text).toBe("first");
  });

  it("refuses beyond scheduler.maxQueuedPerChannel, counting the operator's events for this channel and not the invalid ones", async () => {
    const f = fixture({ config: { scheduler: { maxQueuedPerChannel: 3 } } });
    await f.call(CREATE, { text: "one", schedule: "0 9 * * *", timezone: "UTC" });
    mkdirSync(f.eventsDir(), { recursive: true });
    writeFileSync(join(f.eventsDir(), "broken.json"), "{not json");
    mkdirSync(join(f.workspaceDir, "events"), { recursive: true });
    writeFileSync(join(f.workspaceDir, "events", "ops.json"), JSON.stringify({ type: "periodic", channelId: "cli/local", text: "ops", schedule: "0 8 * * *", timezone: "UTC" }));
    writeFileSync(join(f.workspaceDir, "events", "elsewhere.json"), JSON.stringify({ type: "periodic", channelId: "cli/other", text: "ops", schedule: "0 8 * * *", timezone: "UTC" }));
    await f.call(CREATE, { text: "two", schedule: "0 9 * * *", timezone: "UTC" });
    await expect(f.call(CREATE, { text: "three", schedule: "0 9 * * *", timezone: "UTC" })).rejects.toThrow(
      "this channel already has 3 scheduled events, the most the scheduler takes (scheduler.maxQueuedPerChannel = 3); cancel one first",
    );
    expect(f.eventFiles().length).toBe(3);
  });
});

describe("reminders.event.list and reminders.event.cancel", () => {
  it("list shows the channel's events soonest first, and the files that are not events", async () => {
    const f = fixture();
    expect((await f.call(LIST)).text).toBe("No events are scheduled in this channel.");
    const later = (await f.call(CREATE, { text: "later", at: localDay(5, "10:00", "Europe/Vienna"), timezone: "Europe/Vienna", id: "later" })).details;
    const sooner = (await f.call(CREATE, { text: "daily", schedule: "*/5 * * * *", timezone: "UTC", id: "daily" })).details;
    writeFileSync(join(f.eventsDir(), "hand.json"), JSON.stringify({ type: "one-shot", text: "by hand", at: "2099-01-01T00:00:00Z" }));
    writeFileSync(join(f.eventsDir(), "bad.json"), JSON.stringify({ type: "periodic", text: "x", schedule: "0 9 * * *", timezone: "Nowhere/None" }));
    writeFileSync(join(f.eventsDir(), "notes.txt"), "not an event");
    await f.call(CREATE, { text: "elsewhere", schedule: "0 9 * * *", timezone: "UTC" }, "cli/other");

    const { text, details } = await f.call(LIST);
    const events = details.events as Array<Record<string, unknown>>;
    expect(events.map((e) => e.id)).toEqual(["daily", "later", "hand"]);
    expect(events[0]).toMatchObject({ type: "periodic", text: "daily", when: "*/5 * * * * (UTC)", next: sooner.next });
    expect(events[1]).toMatchObject({ type: "one-shot", text: "later", when: later.at, next: later.next, nextHuman: expect.stringMatching(/10:00 CES?T \(in \d+ days/) });
    expect(events[2]).toMatchObject({ type: "one-shot", text: "by hand", next: "2099-01-01T00:00:00.000Z", nextHuman: expect.stringContaining("00:00 UTC") });
    expect(details.problems).toEqual([{ id: "bad", problem: 'unknown time zone "Nowhere/None" (expected an IANA name like "Europe/Vienna" or "UTC") (the scheduler moves it to events/invalid/)' }]);
    expect(text).toContain('- later (one-shot ');
    expect(text).toContain('text: "later"');
    expect(text).not.toContain("elsewhere");
  });

  it("cancel removes the event and says what it was; an unknown id is an error", async () => {
    const f = fixture();
    const { details } = await f.call(CREATE, { text: "water the plants", schedule: "0 18 * * *", timezone: "Europe/Vienna", id: "plants" });
    const { text } = await f.call(CANCEL, { id: "plants" });
    expect(text).toMatch(/^Cancelled "plants" \(events\/plants\.json\): the periodic reminder "0 18 \* \* \*" \(Europe\/Vienna\); it will not fire again\.\nIt held:\n\{/);
    expect(text).toContain('"text": "water the plants"');
    expect(f.eventFiles()).toEqual([]);
    await expect(f.call(CANCEL, { id: "plants" })).rejects.toThrow('no event "plants" in this channel; reminders.event.list shows its events');
    await expect(fixture().call(CANCEL, { id: "nothing-here" })).rejects.toThrow('no event "nothing-here"');
    expect(details.id).toBe("plants");
  });

  it("cancel takes an id with .json, and removes a file the scheduler could not use", async () => {
    const f = fixture();
    mkdirSync(f.eventsDir());
    writeFileSync(join(f.eventsDir(), "broken.json"), "{");
    expect((await f.call(CANCEL, { id: "broken.json" })).text).toMatch(/^Cancelled "broken" \(events\/broken\.json\): a file the scheduler could not use \(invalid JSON/);
    expect(f.eventFiles()).toEqual([]);
  });
});
