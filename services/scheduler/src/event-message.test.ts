import { describe, expect, it } from "@jest/globals";
import { type EventFileContext, parseEventFile } from "@mom/events";
import { firingMessage, reportMessage } from "./event-message.js";
import { ChannelRateLimit } from "./rate-limit.js";

const ctx: EventFileContext = {
  adapters: new Set(["cli", "slack-acme"]),
};
const parse = (o: unknown) => parseEventFile("e.json", typeof o === "string" ? o : JSON.stringify(o), ctx);
const base = { channelId: "cli/local", text: "hello" };

describe("messages", () => {
  const event = (parse({ type: "one-shot", ...base, at: "2026-12-15T09:00:00+01:00" }) as { ok: true; event: never }).event;

  it("a firing is a ChannelMessage from the scheduler with the event in text and metadata", () => {
    const m = firingMessage({ event, fireTimeMs: Date.parse("2026-12-15T08:00:00Z"), firedAtMs: Date.parse("2026-12-15T08:12:30Z"), lateMinutes: 12 });
    expect(m).toEqual({
      id: "e.json@2026-12-15T08:00:00.000Z",
      channelId: "local",
      timestamp: "2026-12-15T08:12:30.000Z",
      sender: { id: "scheduler", username: "scheduler", isBot: true },
      text: "[EVENT:e.json:one-shot:2026-12-15T09:00:00+01:00] [late by 12 minutes] hello",
      attachments: [],
      isMention: true,
      metadata: {
        event: { file: "e.json", type: "one-shot", at: "2026-12-15T09:00:00+01:00", fireTime: "2026-12-15T08:00:00.000Z", firedAt: "2026-12-15T08:12:30.000Z", late: true, lateMinutes: 12 },
      },
    });
  });

  it("reports of several files travel as one message", () => {
    const m = reportMessage({ adapter: "cli", channelId: "local" }, [
      { kind: "invalid", file: "a.json", movedTo: "events/invalid/a.json", reason: "bad cron" },
      { kind: "missed", file: "b.json", movedTo: "events/missed/b.json", reason: "it was due at …", at: "2026-01-01T09:00:00Z", text: "call ana" },
    ], Date.parse("2026-01-02T00:00:00Z"));
    expect(m.text).toMatch(/^\[EVENT:2 files:problems\] 2 event files need attention:\n- events\/a.json was rejected: bad cron\. It was moved to events\/invalid\/a.json/);
    expect(m.text).toContain('- events/b.json was not fired: it was due at …. It was moved to events/missed/b.json. Its text was: "call ana"');
    expect(m).toMatchObject({ isMention: true, sender: { id: "scheduler", isBot: true }, metadata: { event: { type: "problems" } } });
  });
});

describe("ChannelRateLimit", () => {
  it("allows n per rolling minute per channel", () => {
    const r = new ChannelRateLimit(2);
    expect(r.nextSlot("a", 0)).toBe(0);
    r.record("a", 0);
    r.record("a", 10_000);
    expect(r.nextSlot("a", 20_000)).toBe(60_000);
    expect(r.nextSlot("b", 20_000)).toBe(20_000);
    expect(r.nextSlot("a", 60_001)).toBe(60_001);
  });
});
