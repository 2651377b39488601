import { describe, expect, it } from "@jest/globals";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ChannelMessage } from "./channel-message.js";
import { ControlMessage } from "./control-message.js";
import { PUBLISHED_SCHEMAS, renderJsonSchema } from "./json-schemas.js";
import { OutboundEvent } from "./outbound-event.js";
import { parsePayload, validator } from "./validate.js";

const message = {
  id: "1700000000.000100",
  channelId: "C1",
  timestamp: "2026-11-21T10:00:00.000Z",
  sender: { id: "U1", username: "mario", displayName: "Mario", isBot: false },
  text: "@mom hello",
  rawText: "<@UMOM> hello",
  attachments: [{ filename: "a.png", localPath: "", mimeType: "image/png", size: 3 }],
  isMention: true,
  replyTo: "1700000000.000001",
  metadata: { source: "test" },
};

describe("ChannelMessage", () => {
  const v = validator(ChannelMessage);
  it("round-trips through JSON", () => {
    const parsed = parsePayload(v, JSON.stringify(message));
    expect(parsed).toEqual({ ok: true, value: message });
  });
  it("names the field at fault", () => {
    const bad = { ...message, sender: { ...message.sender, isBot: "no" }, timestamp: "yesterday" };
    const r = v.check(bad);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toContain("/sender/isBot");
      expect(r.reason).toContain("/timestamp");
    }
  });
  it("rejects non-JSON with a reason", () => {
    const r = parsePayload(v, "{nope");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/invalid JSON/);
  });
});

describe("OutboundEvent and ControlMessage", () => {
  it("accepts lifecycle and session events", () => {
    const v = validator(OutboundEvent);
    const usage = { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 3, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
    const events = [
      { type: "run_started", trigger: { messageId: "m", senderId: "u", username: "mario", text: "hi" }, model: "faux/x" },
      { type: "tool_execution_start", toolCallId: "t1", toolName: "bash", label: "List files", args: { command: "ls" } },
      { type: "tool_execution_end", toolCallId: "t1", toolName: "bash", label: "List files", isError: false, resultText: "a", durationMs: 3 },
      { type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "he" } },
      { type: "run_ended", stopReason: "stop", finalText: "done", usage, durationMs: 10 },
    ];
    events.forEach((event, seq) => {
      const out = JSON.parse(JSON.stringify({ runId: "r1", seq, ts: "2026-11-21T10:00:00.000Z", event }));
      expect(v.check(out)).toEqual({ ok: true, value: out });
    });
    expect(v.check({ runId: "r1", seq: 0, ts: "2026-11-21T10:00:00.000Z", event: { type: "nonsense" } }).ok).toBe(false);
  });
  it("accepts abort", () => {
    const v = validator(ControlMessage);
    expect(v.check({ type: "abort", ts: "2026-11-21T10:00:00.000Z", requestedBy: { id: "U1" } }).ok).toBe(true);
    expect(v.check({ type: "explode", ts: "2026-11-21T10:00:00.000Z" }).ok).toBe(false);
  });
});

describe("docs/schemas", () => {
  const dir = join(dirname(fileURLToPath(import.meta.url)), "../../../docs/schemas");
  it.each(Object.entries(PUBLISHED_SCHEMAS))("%s is up to date (run `npm run schemas`)", (file, schema) => {
    expect(readFileSync(join(dir, file), "utf8")).toBe(renderJsonSchema(schema));
  });
});
