// The calendar integration against a real CalDAV server (Debian's radicale, started here).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { resolveCredentialRef } from "@mom/auth";
import { freePort, radicaleUnavailable, startRadicale, type TestRadicale } from "@mom/testing";
import { createHostToolApi, type MomTool, prepareToolArgs } from "@mom/tools";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tzlib_get_ical_block } from "timezones-ical-library";
import { fetchCalendarObjects, getBasicAuthHeaders } from "tsdav";
import type { Occurrence } from "./ics.js";
import caldavTools from "./index.js";

const unavailable = radicaleUnavailable();
if (unavailable) process.stderr.write(`integrations/caldav/caldav.test.ts skipped: ${unavailable}\n`);

const ANN_PASSWORD = "ann-Secret-7f3a";
const BOB_PASSWORD = "bob-Secret-19c2";

/** An event as caldav.event.list details it. */
type Listed = Omit<Occurrence, "at">;

(unavailable ? describe.skip : describe)("caldav integration (real radicale)", () => {
  let server: TestRadicale;
  let dataDir: string;
  let bobEventUid: string;

  /** The tools as the runner loads them, with config.json tools.settings.caldav = settings. */
  const toolsWith = (settings: Record<string, unknown> | undefined, env: NodeJS.ProcessEnv = {}) =>
    caldavTools(
      createHostToolApi({
        dataDir,
        workspaceDir: dataDir,
        settings: settings ? { caldav: settings } : {},
        secret: (ref) => resolveCredentialRef(ref, dataDir, () => [{ id: "caldav-ann", secret: "file:ann-password" }], env),
      }),
    );
  const annWork = () => ({ url: server.url, username: "ann", password: "file:ann-password", calendar: "Work" });

  /** A call as invoke_tool makes it: arguments validated against the schema, then execute. */
  async function call(tools: MomTool[], id: string, raw: object): Promise<{ text: string; details: Record<string, unknown> }> {
    const tool = tools.find((t) => t.id === id)!;
    const out = await tool.execute(prepareToolArgs(tool, raw) as never, { signal: AbortSignal.timeout(20_000), channel: "cli/local", cwd: dataDir });
    return typeof out === "string" ? { text: out, details: {} } : { text: out.text, details: out.details as Record<string, unknown> };
  }
  const list = async (tools: MomTool[], args: object) => (await call(tools, "caldav.event.list", args)).details.events as Listed[];
  const failure = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (e) {
      return (e as Error).message;
    }
    throw new Error("expected the call to fail");
  };
  const put = async (user: string, password: string, path: string, ics: string) => {
    const res = await fetch(new URL(path, server.url), {
      method: "PUT",
      headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`, "content-type": "text/calendar; charset=utf-8" },
      body: ics,
    });
    expect(res.status).toBe(201);
  };

  beforeAll(async () => {
    server = await startRadicale({ users: { ann: ANN_PASSWORD, bob: BOB_PASSWORD } });
    dataDir = mkdtempSync(join(tmpdir(), "mom-caldav-"));
    writeFileSync(join(dataDir, "ann-password"), `${ANN_PASSWORD}\n`);
    writeFileSync(join(dataDir, "wrong-password"), "guessed-Wrong-55aa\n");
    const vienna = `BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n${(tzlib_get_ical_block("Europe/Vienna") as string[])[0]}\r\nEND:VCALENDAR\r\n`;
    await server.createCalendar("ann", "work", { displayName: "Work", timezone: vienna });
    await server.createCalendar("ann", "home", { displayName: "Home" });
    await server.createCalendar("bob", "private", { displayName: "Private" });
    bobEventUid = "bob-secret-meeting";
    await put("bob", BOB_PASSWORD, "/bob/private/bob.ics", event(bobEventUid, "Bob's secret", "DTSTART:20261110T100000Z", "DTEND:20261110T110000Z"));
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("creates, lists, moves and deletes an event (round trip through the server)", async () => {
    const tools = toolsWith(annWork());
    expect(tools.map((t) => `${t.id}:${t.risk}`)).toEqual(["caldav.event.list:read", "caldav.event.create:write", "caldav.event.move:write", "caldav.event.delete:destructive"]);
    const created = await call(tools, "caldav.event.create", {
      title: "Planning, Q4; budget",
      start: "2026-11-03T10:00",
      durationMinutes: 90,
      location: "Room 4, 2nd floor",
      description: "Agenda:\n1. numbers\n2. hiring",
    });
    const uid = created.details.uid as string;
    expect(uid).toMatch(/^[0-9a-f-]{36}$/);
    // Times without a zone are in the calendar's own (its calendar-timezone: Europe/Vienna).
    expect(created.text).toBe(`Created "Planning, Q4; budget" in calendar "Work": 2026-11-03T10:00:00+01:00 → 2026-11-03T11:30:00+01:00 (Europe/Vienna). uid "${uid}"`);

    const listing = await call(tools, "caldav.event.list", { from: "2026-11-01", to: "2026-11-08" });
    expect(listing.text).toContain(`Calendar "Work": 1 event(s) from 2026-11-01T00:00:00+01:00 to 2026-11-08T00:00:00+01:00 (times in Europe/Vienna):`);
    expect(listing.details.events).toEqual([
      { uid, title: "Planning, Q4; budget", start: "2026-11-03T10:00:00+01:00", end: "2026-11-03T11:30:00+01:00", allDay: false, location: "Room 4, 2nd floor", recurring: false },
    ]);
    // Shown in another zone when asked.
    expect((await list(tools, { from: "2026-11-01", to: "2026-11-08", timezone: "America/New_York" }))[0]).toMatchObject({
      start: "2026-11-03T04:00:00-05:00",
      end: "2026-11-03T05:30:00-05:00",
    });

    // Moved: keeps its length unless told otherwise; SEQUENCE goes up; the description stays.
    const moved = await call(tools, "caldav.event.move", { uid, start: "2026-11-04T14:00" });
    expect(moved.text).toBe(
      `Moved "Planning, Q4; budget" (uid "${uid}") in calendar "Work" from 2026-11-03T10:00:00+01:00 → 2026-11-03T11:30:00+01:00 to 2026-11-04T14:00:00+01:00 → 2026-11-04T15:30:00+01:00 (Europe/Vienna).`,
    );
    await call(tools, "caldav.event.move", { uid, start: "2026-11-04T15:00", end: "2026-11-04T17:00" });
    expect(await list(tools, { from: "2026-11-01", to: "2026-11-08" })).toEqual([expect.objectContaining({ uid, start: "2026-11-04T15:00:00+01:00", end: "2026-11-04T17:00:00+01:00" })]);
    const [stored] = server.items("ann", "work");
    expect(stored).toMatch(/\r\nSEQUENCE:2\r\n/);
    expect(stored).toContain("DTSTART;TZID=Europe/Vienna:20261104T150000\r\n");
    expect(stored).toContain("DESCRIPTION:Agenda:\\n1. numbers\\n2. hiring\r\n");

    const deleted = await call(tools, "caldav.event.delete", { uid });
    expect(deleted.text).toBe(`Deleted "Planning, Q4; budget" (uid "${uid}", 2026-11-04T15:00:00+01:00 → 2026-11-04T17:00:00+01:00) from calendar "Work".`);
    expect(server.items("ann", "work")).toEqual([]);
    expect((await call(tools, "caldav.event.list", { from: "2026-11-01", to: "2026-11-08" })).text).toBe(
      `Calendar "Work" has no events from 2026-11-01T00:00:00+01:00 to 2026-11-08T00:00:00+01:00 (times in Europe/Vienna).`,
    );
    expect(await failure(call(tools, "caldav.event.delete", { uid }))).toBe(`uid: no event with uid "${uid}" in calendar "Work"; caldav.event.list shows the events and their uids`);
  });

  it("all-day events: a date makes one, end is the day after the last day, moves keep the length", async () => {
    const tools = toolsWith(annWork());
    const { details } = await call(tools, "caldav.event.create", { title: "Conference", start: "2026-12-01", end: "2026-12-04" });
    const uid = details.uid as string;
    expect(await list(tools, { from: "2026-12-02T12:00", to: "2026-12-02T13:00" })).toEqual([
      { uid, title: "Conference", start: "2026-12-01", end: "2026-12-04", allDay: true, recurring: false },
    ]);
    expect(server.items("ann", "work").find((i) => i.includes(uid))).toContain("DTSTART;VALUE=DATE:20261201\r\n");
    // The first half hour of the day in Vienna (23:00Z the day before), where a server reading the day as UTC would not look.
    expect((await list(tools, { from: "2026-12-01T00:00", to: "2026-12-01T00:30" })).map((e) => e.uid)).toEqual([uid]);
    expect(await list(tools, { from: "2026-11-30T23:00", to: "2026-12-01T00:00" })).toEqual([]);
    await call(tools, "caldav.event.move", { uid, start: "2026-12-10" });
    expect((await list(tools, { from: "2026-12-01", to: "2026-12-31" })).map((e) => [e.start, e.end])).toEqual([["2026-12-10", "2026-12-13"]]);
    expect(await failure(call(tools, "caldav.event.move", { uid, start: "2026-12-10T09:00" }))).toBe(`start: "Conference" is an all-day event: give start as a date (e.g. 2026-10-25)`);
    expect(await failure(call(tools, "caldav.event.create", { title: "x", start: "2026-12-01", end: "2026-12-01" }))).toMatch(/end: 2026-12-01 is not after start 2026-12-01; for an all-day event end is the day after its last day \(2026-12-02 for one day\)/);
    await call(tools, "caldav.event.delete", { uid });
  });

  it("stores times across the end of daylight saving time (Europe/Vienna, last Sunday of October) right", async () => {
    const tools = toolsWith({ ...annWork(), timezone: "Europe/Vienna" });
    // 01:30 CEST (+02:00) to 04:30 CET (+01:00): four real hours although the clock shows three.
    const night = (await call(tools, "caldav.event.create", { title: "Night shift", start: "2026-10-25T01:30", end: "2026-10-25T04:30" })).details.uid as string;
    const stored = server.items("ann", "work").find((i) => i.includes(night))!;
    expect(stored).toContain("DTSTART;TZID=Europe/Vienna:20261025T013000\r\n");
    expect(stored).toContain("DTEND;TZID=Europe/Vienna:20261025T043000\r\n");
    expect(stored).toContain("BEGIN:VTIMEZONE\r\nTZID:Europe/Vienna\r\n");
    expect(await list(tools, { from: "2026-10-24T00:00Z", to: "2026-10-26T00:00Z", timezone: "UTC" })).toEqual([
      expect.objectContaining({ uid: night, start: "2026-10-24T23:30:00+00:00", end: "2026-10-25T03:30:00+00:00" }),
    ]);
    // The server itself reads the zone right: its own time-range search finds the event inside the last (fourth) hour, not after it.
    const search = async (start: string, end: string) =>
      (
        await fetchCalendarObjects({
          calendar: { url: `${server.url}ann/work/` },
          timeRange: { start, end },
          headers: getBasicAuthHeaders({ username: "ann", password: ANN_PASSWORD }),
        })
      ).map((o) => o.url.replace(/^.*\//, ""));
    expect(await search("2026-10-25T03:20:00Z", "2026-10-25T03:25:00Z")).toEqual([`${night}.ics`]);
    expect(await search("2026-10-25T03:31:00Z", "2026-10-25T04:00:00Z")).toEqual([]);
    expect((await list(tools, { from: "2026-10-25T03:20Z", to: "2026-10-25T03:25Z" })).map((e) => e.uid)).toEqual([night]);
    expect(await list(tools, { from: "2026-10-25T03:31Z", to: "2026-10-25T04:00Z" })).toEqual([]);

    // Two real hours from 01:30 CEST end at the second 02:30 (CET): stored in UTC, since a TZID wall time 02:30 would read as the first.
    const two = (await call(tools, "caldav.event.create", { title: "Two hours", start: "2026-10-25T01:30", durationMinutes: 120 })).details.uid as string;
    const storedTwo = server.items("ann", "work").find((i) => i.includes(two))!;
    expect(storedTwo).toContain("DTSTART;TZID=Europe/Vienna:20261025T013000\r\n");
    expect(storedTwo).toContain("DTEND:20261025T013000Z\r\n");
    expect((await list(tools, { from: "2026-10-25", to: "2026-10-26" })).find((e) => e.uid === two)).toMatchObject({ start: "2026-10-25T01:30:00+02:00", end: "2026-10-25T02:30:00+01:00" });

    // A wall time that happens twice needs its offset; one the clocks skip is refused.
    expect(await failure(call(tools, "caldav.event.create", { title: "x", start: "2026-10-25T02:30" }))).toMatch(/start: 2026-10-25T02:30 happens twice in Europe\/Vienna .*2026-10-25T02:30\+02:00 for the first or 2026-10-25T02:30\+01:00 for the second/);
    const second = (await call(tools, "caldav.event.create", { title: "Second 02:30", start: "2026-10-25T02:30+01:00", durationMinutes: 15 })).details.uid as string;
    expect(server.items("ann", "work").find((i) => i.includes(second))).toContain("DTSTART:20261025T013000Z\r\n");
    expect(await failure(call(tools, "caldav.event.create", { title: "x", start: "2026-03-29T02:30" }))).toMatch(/2026-03-29T02:30 does not exist in Europe\/Vienna .*use 2026-03-29T03:30/);

    // Moving across the change keeps the real length (four hours), not the clock's.
    await call(tools, "caldav.event.move", { uid: night, start: "2026-10-24T23:00" });
    expect((await list(tools, { from: "2026-10-24", to: "2026-10-26" })).find((e) => e.uid === night)).toMatchObject({ start: "2026-10-24T23:00:00+02:00", end: "2026-10-25T02:00:00+01:00" });
    for (const uid of [night, two, second]) await call(tools, "caldav.event.delete", { uid });
  });

  it("reads other clients' events: a weekly series across the DST change is expanded, cannot be moved, and is deleted whole", async () => {
    const tools = toolsWith(annWork());
    const series = event("weekly-standup@other-client", "Standup", "DTSTART;TZID=Europe/Vienna:20261015T090000", "DTEND;TZID=Europe/Vienna:20261015T091500", "RRULE:FREQ=WEEKLY;COUNT=4");
    await put("ann", ANN_PASSWORD, "/ann/work/standup.ics", series.replace("BEGIN:VEVENT", `${(tzlib_get_ical_block("Europe/Vienna") as string[])[0]}\r\nBEGIN:VEVENT`));
    const occurrences = await list(tools, { from: "2026-10-01", to: "2026-11-30" });
    expect(occurrences.map((e) => [e.start, e.recurring])).toEqual([
      ["2026-10-15T09:00:00+02:00", true],
      ["2026-10-22T09:00:00+02:00", true],
      ["2026-10-29T09:00:00+01:00", true],
      ["2026-11-05T09:00:00+01:00", true],
    ]);
    expect(await failure(call(tools, "caldav.event.move", { uid: "weekly-standup@other-client", start: "2026-10-15T10:00" }))).toMatch(
      /cannot move "Standup": it is a recurring event .*delete it and create a new one/,
    );
    expect((await call(tools, "caldav.event.delete", { uid: "weekly-standup@other-client" })).text).toContain("with all its occurrences");
    expect(server.items("ann", "work")).toEqual([]);
  });

  it("refuses CRLF / iCalendar injection: no extra property or event reaches the server", async () => {
    const tools = toolsWith(annWork());
    const attendee = "X\r\nATTENDEE;CN=evil:mailto:evil@example.org";
    for (const [field, value] of [
      ["title", attendee],
      ["title", "X\rATTENDEE:mailto:evil@example.org"],
      ["title", "X\nEND:VEVENT"],
      ["title", "X\u2028ATTENDEE:mailto:evil@example.org"],
      ["location", "Room\r\nATTENDEE:mailto:evil@example.org"],
    ] as const) {
      const args = { title: "Fine", start: "2026-11-20T10:00", [field]: value };
      expect(await failure(call(tools, "caldav.event.create", args))).toBe(`${field}: must be one line without control characters (no \\r, \\n, tabs or other control codes)`);
    }
    expect(server.items("ann", "work")).toEqual([]);

    // Text that looks like iCalendar is stored as text: one SUMMARY, one DESCRIPTION, one VEVENT, no ATTENDEE.
    const description = "ok\r\nATTENDEE;CN=evil:mailto:evil@example.org\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:injected\rSUMMARY:second";
    const uid = (await call(tools, "caldav.event.create", { title: "END:VEVENT", start: "2026-11-20T10:00", description, location: "BEGIN:VALARM;X=1" })).details.uid as string;
    const [stored] = server.items("ann", "work");
    const lines = stored!.split("\r\n");
    expect(lines.filter((l) => /^ATTENDEE/i.test(l))).toEqual([]);
    expect(lines.filter((l) => l === "BEGIN:VEVENT")).toHaveLength(1);
    expect(lines.filter((l) => /^UID/.test(l))).toEqual([`UID:${uid}`]);
    expect(lines).toContain("SUMMARY:END:VEVENT");
    expect(stored).not.toMatch(/\r(?!\n)/);
    expect(await list(tools, { from: "2026-11-20", to: "2026-11-21" })).toEqual([expect.objectContaining({ uid, title: "END:VEVENT", location: "BEGIN:VALARM;X=1" })]);

    // A uid is a name in the configured calendar, never a path or a property.
    const homeUid = (await call(toolsWith({ ...annWork(), calendar: "Home" }), "caldav.event.create", { title: "Dentist", start: "2026-11-21T08:00" })).details.uid as string;
    for (const bad of [`../home/${homeUid}`, `../home/${homeUid}.ics`, "/ann/home/", "..", "a\\b"]) {
      expect(await failure(call(tools, "caldav.event.delete", { uid: bad }))).toMatch(/^uid: ".*" looks like a path; a uid names an event in the configured calendar/);
    }
    expect(await failure(call(tools, "caldav.event.delete", { uid: `${uid}\r\nATTENDEE:mailto:evil@example.org` }))).toMatch(/^uid: must not contain line breaks or control characters/);
    // Another calendar's event, another user's, and XML-ish text are simply not here.
    for (const other of [homeUid, bobEventUid, "END:VEVENT", "a<b&c>]]>", `${uid.slice(0, 8)}`]) {
      expect(await failure(call(tools, "caldav.event.move", { uid: other, start: "2026-11-22T08:00" }))).toBe(`uid: no event with uid ${JSON.stringify(other)} in calendar "Work"; caldav.event.list shows the events and their uids`);
    }
    expect(server.items("ann", "home")).toHaveLength(1);
    expect(server.items("bob", "private")).toHaveLength(1);
    await call(tools, "caldav.event.delete", { uid });
    await call(toolsWith({ ...annWork(), calendar: "Home" }), "caldav.event.delete", { uid: homeUid });
  });

  it("gives errors the model or the operator can act on", async () => {
    const tools = toolsWith(annWork());
    expect(await failure(call(tools, "caldav.event.create", { title: "x", start: "2026-11-20T10:00", end: "2026-11-20T09:00" }))).toBe(
      "end: 2026-11-20T09:00:00+01:00 is not after start 2026-11-20T10:00:00+01:00: end must be after start",
    );
    expect(await failure(call(tools, "caldav.event.create", { title: "x", start: "2026-11-20T10:00", timezone: "Mars/Olympus" }))).toMatch(/^timezone: unknown timezone "Mars\/Olympus": use an IANA name/);
    expect(await failure(call(tools, "caldav.event.create", { title: "x", start: "tomorrow 9am" }))).toMatch(/^start: "tomorrow 9am" is not a date-time: write 2026-10-25T09:30 \(wall-clock time in Europe\/Vienna\)/);
    expect(await failure(call(tools, "caldav.event.create", { title: "x", start: "2026-11-20T10:00", end: "2026-11-20T11:00", durationMinutes: 5 }))).toBe("give end or durationMinutes, not both");
    expect(await failure(call(tools, "caldav.event.list", { from: "2026-01-01", to: "2027-06-01" }))).toMatch(/the range may be at most 366 days/);
    expect(await failure(call(tools, "caldav.event.delete", { uid: "no-such-event" }))).toBe('uid: no event with uid "no-such-event" in calendar "Work"; caldav.event.list shows the events and their uids');

    // A wrong password: "credentials refused", naming the settings fields, never a password.
    const wrong = await failure(call(toolsWith({ ...annWork(), password: "file:wrong-password" }), "caldav.event.list", {}));
    expect(wrong).toBe(
      'the CalDAV server refused the credentials (401) for user "ann": check tools.settings.caldav.username and the password that tools.settings.caldav.password (file:wrong-password) points at',
    );
    const wrongByUrl = await failure(call(toolsWith({ ...annWork(), calendar: "/ann/work/", password: "file:wrong-password" }), "caldav.event.delete", { uid: "x" }));
    expect(wrongByUrl).toMatch(/refused the credentials \(401\)/);
    for (const m of [wrong, wrongByUrl]) {
      expect(m).not.toContain("guessed-Wrong-55aa");
      expect(m).not.toContain(ANN_PASSWORD);
    }
    // The same password through an auth profile works; a literal in the settings is refused before anything is sent.
    expect(await list(toolsWith({ ...annWork(), password: "profile:caldav-ann" }), { from: "2026-01-01", to: "2026-01-02" })).toEqual([]);
    const literal = await failure(call(toolsWith({ ...annWork(), password: ANN_PASSWORD }), "caldav.event.list", {}));
    expect(literal).toBe("tools.settings.caldav.password: a credential must be a reference (env:NAME, file:PATH or profile:<id>), not a literal");
    expect(await failure(call(toolsWith({ ...annWork(), password: "env:CALDAV_PASSWORD" }), "caldav.event.list", {}))).toBe(
      "tools.settings.caldav.password: environment variable CALDAV_PASSWORD is not set",
    );
    expect(await list(toolsWith({ ...annWork(), password: "env:CALDAV_PASSWORD" }, { CALDAV_PASSWORD: ANN_PASSWORD }), { from: "2026-01-01", to: "2026-01-02" })).toEqual([]);

    // Unreachable, unconfigured, misconfigured.
    const closed = await freePort();
    expect(await failure(call(toolsWith({ ...annWork(), url: `http://127.0.0.1:${closed}/` }), "caldav.event.list", {}))).toBe(
      `the CalDAV server at http://127.0.0.1:${closed} is unreachable (ECONNREFUSED): check tools.settings.caldav.url and that the server is up`,
    );
    expect(await failure(call(toolsWith(undefined), "caldav.event.list", {}))).toBe(
      "the caldav integration is not configured: set tools.settings.caldav in config.json (integrations/caldav/README.md)",
    );
    expect(await failure(call(toolsWith({ url: server.url, password: "file:ann-password" }), "caldav.event.list", {}))).toMatch(/config.json tools.settings.caldav is invalid:\n  - tools.settings.caldav: must have required properties username/);
    expect(await failure(call(toolsWith({ ...annWork(), timezone: "Vienna" }), "caldav.event.list", {}))).toMatch(/^tools\.settings\.caldav\.timezone: unknown timezone "Vienna"/);
    expect(await failure(call(toolsWith({ ...annWork(), calendar: "Wrok" }), "caldav.event.list", {}))).toBe(
      'tools.settings.caldav.calendar: user "ann" has no calendar named "Wrok"; there are: "Home", "Work"',
    );
    expect(await failure(call(toolsWith({ ...annWork(), calendar: undefined }), "caldav.event.list", {}))).toBe(
      'tools.settings.caldav.calendar is not set and user "ann" has 2 calendars ("Home", "Work"): set it to one of them',
    );
    expect(await failure(call(toolsWith({ ...annWork(), calendar: "/ann/nothing/" }), "caldav.event.list", {}))).toBe("tools.settings.caldav.calendar: /ann/nothing/ does not exist on the server");
    // Another user's calendar by URL: radicale's owner-only rights refuse it.
    expect(await failure(call(toolsWith({ ...annWork(), calendar: "/bob/private/" }), "caldav.event.list", {}))).toMatch(/^tools\.settings\.caldav\.calendar: \/bob\/private\/ cannot be read \(403/);
    // A calendar on another origin would get the credentials: refused.
    expect(await failure(call(toolsWith({ ...annWork(), calendar: `http://localhost:${server.port}/ann/work/` }), "caldav.event.list", {}))).toMatch(
      /^the CalDAV server pointed at http:\/\/localhost:\d+, not http:\/\/127\.0\.0\.1:\d+ \(tools\.settings\.caldav\.url\): the credentials are sent only to/,
    );
    // By URL it works as by name, and without a zone anywhere the calendar's own is used.
    expect((await call(toolsWith({ ...annWork(), calendar: `${server.url}ann/work/` }), "caldav.event.list", { from: "2026-01-01", to: "2026-01-02" })).text).toBe(
      'Calendar "Work" has no events from 2026-01-01T00:00:00+01:00 to 2026-01-02T00:00:00+01:00 (times in Europe/Vienna).',
    );
    expect((await call(toolsWith({ ...annWork(), calendar: "Home" }), "caldav.event.list", { from: "2026-01-01", to: "2026-01-02" })).text).toContain("(times in UTC)");
  });
});

/** An event as another client would store it (a fixture, not how the integration writes). */
function event(uid: string, summary: string, ...lines: string[]): string {
  return ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//other client//EN", "BEGIN:VEVENT", `UID:${uid}`, "DTSTAMP:20260101T000000Z", `SUMMARY:${summary}`, ...lines, "END:VEVENT", "END:VCALENDAR", ""].join("\r\n");
}
