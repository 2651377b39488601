import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { ChannelMessage, DeadLetter } from "@mom/contracts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "../support/discord-stack.js";
import { startStack, type Stack } from "../support/stack.js";
import { deadLetters } from "../support/streams.js";
import { connectionOf } from "../../libs/bus/src/bus.js"; // the NATS handles behind a Bus: tests and benches only

// Bad input on mom.in, as a hostile or careless producer sends it: each payload ends as one dead
// letter whose reason says what is wrong, and nothing of it reaches a channel or the model.
let st: Stack;
beforeAll(async () => {
  st = await startStack({ cli: false });
});
afterAll(async () => {
  await st?.stop();
});

/** A message whose metadata.deep is `{"a":{"a":…1…}}` `depth` levels deep, as JSON text (JSON.stringify itself overflows on it). */
const nested = (id: string, depth: number): string =>
  JSON.stringify(message(id, { metadata: { deep: "@" } })).replace('"@"', `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`);

function message(id: string, extra: Partial<ChannelMessage> = {}): ChannelMessage {
  return {
    id,
    channelId: "local",
    timestamp: new Date().toISOString(),
    sender: { id: "u-1", username: "tester", isBot: false },
    text: "@mom hello",
    attachments: [],
    isMention: true,
    ...extra,
  };
}

interface Case {
  name: string;
  adapter?: string;
  channelId?: string;
  payload: (id: string) => unknown;
  reason: RegExp;
  check?: (letter: DeadLetter) => void;
}

const cases: Case[] = [
  { name: "text that is not JSON", payload: () => "{not json", reason: /^invalid JSON: / },
  { name: "a missing sender", payload: (id) => ({ ...message(id), sender: undefined }), reason: /^\/: .*sender/ },
  { name: "an unknown property", payload: (id) => ({ ...message(id), extra: 1 }), reason: /unknown properties "extra"/ },
  {
    name: "metadata nested 1,000 levels",
    payload: (id) => nested(id, 1000),
    reason: /^\/metadata: nested deeper than 8 levels at \/metadata\/deep\/a\/a/,
  },
  {
    name: "metadata nested 10,000 levels",
    payload: (id) => nested(id, 10_000),
    reason: /^\/metadata: nested deeper than 8 levels at \/metadata\/deep\/a/,
    check: (l) => expect(l.reason).not.toMatch(/call stack/),
  },
  { name: "metadata of 20 KB", payload: (id) => message(id, { metadata: { blob: "x".repeat(20_000) } }), reason: /^\/metadata: larger than 16384 bytes as JSON/ },
  {
    name: "an invalid payload near NATS's 1 MB max",
    payload: (id) => ({ ...message(id), text: "y".repeat(1_000_000), isMention: "yes" }),
    reason: /^\/isMention: /,
    check: (l) => {
      expect(l.payloadTruncated).toBe(true);
      expect(l.payloadBytes).toBeGreaterThan(1_000_000);
      expect(l.payload.startsWith('{"id":')).toBe(true);
      expect(l.payload.length).toBe(64 * 1024);
    },
  },
  {
    name: "an adapter that is not in config.json",
    adapter: "nosuch",
    payload: (id) => message(id),
    reason: /^adapter "nosuch" is not in config\.json \(adapters: cli\)$/,
    check: () => expect(existsSync(join(st.loaded.paths.workspaceDir, "channels", "nosuch"))).toBe(false),
  },
  { name: "a channelId that contradicts the subject", channelId: "local", payload: (id) => message(id, { channelId: "other" }), reason: /^payload channelId "other" does not match subject channel "local"$/ },
];

describe("bad input on mom.in is dead-lettered with a clear reason", () => {
  it.each(cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const id = `bad-${Math.random().toString(36).slice(2)}`;
    const subject = st.bus.subjects.channel("in", { adapter: c.adapter ?? "cli", channelId: c.channelId ?? "local" });
    const payload = c.payload(id);
    await connectionOf(st.bus).js.publish(subject, typeof payload === "string" ? payload : JSON.stringify(payload), { msgID: id });
    const letter = await eventually(async () => (await deadLetters(st.bus)).find((l) => l.msgId === id), `the dead letter of ${c.name}`);
    expect(letter).toMatchObject({ stage: "agent-runner", subject });
    expect(letter.reason).toMatch(c.reason);
    c.check?.(letter);
    // Nothing of it reached the model.
    expect(st.llm.requests).toHaveLength(0);
  });
});
