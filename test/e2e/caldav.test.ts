// The CalDAV integration end to end: the scripted model, real NATS, a real runner that loads
// integrations/ as the global tools dir, and a real CalDAV server (radicale). A read runs at once;
// a delete is destructive and waits for a person's decision; the receipts tell what happened.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { radicaleUnavailable, startRadicale, type TestRadicale } from "@mom/testing";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startStack, type Stack } from "../support/stack.js";
import { outboundEvents } from "../support/streams.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const unavailable = radicaleUnavailable();
if (unavailable) process.stderr.write(`test/e2e/caldav.test.ts skipped: ${unavailable}\n`);

const PASSWORD = "ann-Caldav-e2e-5d1";
const DENTIST = "dentist-0001@other-client";
const LUNCH = "lunch-0002@other-client";

const invoke = (tool: string, args: object, label: string) => ({ toolCalls: [{ name: "invoke_tool", arguments: { label, tool, args } }] });
/** An event as a calendar app would have stored it (a fixture). */
const event = (uid: string, summary: string, start: string, end: string) =>
  ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//other client//EN", "BEGIN:VEVENT", `UID:${uid}`, "DTSTAMP:20260101T000000Z", `SUMMARY:${summary}`, `DTSTART:${start}`, `DTEND:${end}`, "END:VEVENT", "END:VCALENDAR", ""].join("\r\n");

(unavailable ? describe.skip : describe)("calendar over CalDAV end to end (real radicale, NATS, runner, scripted model)", () => {
  let server: TestRadicale;
  let s: Stack | undefined;
  beforeAll(async () => {
    server = await startRadicale({ users: { ann: PASSWORD } });
    await server.createCalendar("ann", "work", { displayName: "Work" });
    for (const [uid, summary, start, end] of [
      [DENTIST, "Dentist", "20261110T080000Z", "20261110T090000Z"],
      [LUNCH, "Team lunch", "20261111T110000Z", "20261111T123000Z"],
    ] as const) {
      const res = await fetch(new URL(`/ann/work/${uid.slice(0, 4)}.ics`, server.url), {
        method: "PUT",
        headers: { authorization: `Basic ${Buffer.from(`ann:${PASSWORD}`).toString("base64")}`, "content-type": "text/calendar" },
        body: event(uid, summary, start, end),
      });
      expect(res.status).toBe(201);
    }
  }, 60_000);
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });
  afterAll(async () => {
    await server?.stop();
  });

  async function stack(): Promise<Stack> {
    s = await startStack({
      runner: false,
      config: {
        tools: {
          globalDir: join(root, "integrations"),
          settings: { caldav: { url: server.url, username: "ann", password: "file:caldav-password", calendar: "Work", timezone: "Europe/Vienna" } },
        },
      },
    });
    writeFileSync(join(s.dataDir, "caldav-password"), `${PASSWORD}\n`);
    await s.startRunner();
    return s;
  }
  const receipts = (st: Stack) =>
    readFileSync(join(st.loaded.paths.workspaceDir, "channels/cli/local/receipts.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; toolId: string; risk: string; toolCallId: string; actor?: string; detail?: string });
  const trail = (st: Stack) => receipts(st).map((r) => `${r.toolId}:${r.type}`);
  const stored = () => server.items("ann", "work").join("\n");

  it("lists at once, then deletes only after approval: the full receipt trail, and the event is gone from the server", async () => {
    const st = await stack();
    st.llm.enqueue(
      invoke("caldav.event.list", { from: "2026-11-09", to: "2026-11-16" }, "Look at next week's calendar"),
      invoke("caldav.event.delete", { uid: DENTIST }, "Cancel the dentist"),
      { text: "The dentist appointment is cancelled." },
    );
    st.type("cancel my dentist appointment next week");
    await st.output.waitFor("🔐 Approval needed: mom wants to run caldav.event.delete (destructive)");
    // The read ran without asking, and the model saw the events with their uids, in the configured zone.
    const seen = JSON.stringify(st.llm.requests[1]!.messages.at(-1));
    expect(seen).toContain(`\\"Dentist\\" · 2026-11-10T09:00:00+01:00 → 2026-11-10T10:00:00+01:00 · uid \\"${DENTIST}\\"`);
    expect(seen).toContain(`\\"Team lunch\\" · 2026-11-11T12:00:00+01:00 → 2026-11-11T13:30:00+01:00 · uid \\"${LUNCH}\\"`);
    expect(trail(st)).toEqual(["caldav.event.list:tool.call.requested", "caldav.event.list:tool.call.started", "caldav.event.list:tool.call.succeeded", "caldav.event.delete:tool.call.requested"]);
    // Nothing is deleted while the person decides.
    expect(stored()).toContain(DENTIST);

    st.type("y");
    await st.output.waitForAnswer("The dentist appointment is cancelled.");
    expect(trail(st)).toEqual([
      "caldav.event.list:tool.call.requested",
      "caldav.event.list:tool.call.started",
      "caldav.event.list:tool.call.succeeded",
      "caldav.event.delete:tool.call.requested",
      "caldav.event.delete:tool.call.approved",
      "caldav.event.delete:tool.call.started",
      "caldav.event.delete:tool.call.succeeded",
    ]);
    const rs = receipts(st);
    expect(rs[0]).toMatchObject({ risk: "read" });
    expect(rs[4]).toMatchObject({ risk: "destructive", actor: "@tester" });
    expect(new Set(rs.slice(3).map((r) => r.toolCallId)).size).toBe(1);
    expect(JSON.stringify(st.llm.requests[2]!.messages.at(-1))).toContain(`Deleted \\"Dentist\\" (uid \\"${DENTIST}\\"`);
    expect(stored()).not.toContain(DENTIST);
    expect(stored()).toContain(LUNCH);
    // The answer's tool activity shows both calls it rests on.
    const ended = (await outboundEvents(st.bus)).map((e) => e.event).find((e) => e.type === "run_ended") as { toolActivity?: Array<{ toolId: string; status: string }> };
    expect(ended.toolActivity).toEqual([
      expect.objectContaining({ toolId: "caldav.event.list", status: "succeeded" }),
      expect.objectContaining({ toolId: "caldav.event.delete", status: "succeeded" }),
    ]);
  }, 60_000);

  it("a denied delete leaves the event on the server and a denied receipt", async () => {
    const st = await stack();
    st.llm.enqueue(invoke("caldav.event.delete", { uid: LUNCH }, "Cancel the team lunch"), { text: "I did not cancel the lunch." });
    st.type("cancel the team lunch");
    await st.output.waitFor("🔐 Approval needed: mom wants to run caldav.event.delete (destructive)");
    st.type("n");
    await st.output.waitForAnswer("I did not cancel the lunch.");
    expect(st.output.text).toContain("⊘ Denied by @tester.");
    expect(trail(st)).toEqual(["caldav.event.delete:tool.call.requested", "caldav.event.delete:tool.call.denied"]);
    expect(receipts(st)[1]).toMatchObject({ risk: "destructive", actor: "@tester" });
    expect(JSON.stringify(st.llm.requests[1]!.messages)).toContain("denied by @tester");
    expect(stored()).toContain(LUNCH);
  }, 60_000);
});
