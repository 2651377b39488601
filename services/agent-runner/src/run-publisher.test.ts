import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Bus } from "@mom/bus";
import { createLogger } from "@mom/config";
import { MAX_EVENT_TEXT, OutboundEvent, parsePayload, REANNOUNCED_SEQ, validator } from "@mom/contracts";
import { ZERO_USAGE } from "@mom/agent";
import { startTestNats, type TestNats } from "@mom/testing";
import { DELTA_WINDOW_MS, RunPublisher } from "./run-publisher.js";
import { connectionOf } from "../../../libs/bus/src/bus.js"; // the NATS handles behind a Bus: tests and benches only
import type { JetStreamClient } from "@nats-io/jetstream";

describe("RunPublisher", () => {
  let nats: TestNats;
  let bus: Bus;
  const logger = createLogger("test", { level: "silent" });
  beforeAll(async () => {
    nats = await startTestNats();
    bus = await Bus.connect({ url: nats.url, name: "publisher-test", namespace: nats.namespace, logger });
    await bus.provision();
  });
  afterAll(async () => {
    await bus.drain();
    await nats.stop();
  });

  /** The events on one channel's out subject, in stream order. */
  async function eventsOf(ref: { adapter: string; channelId: string }): Promise<OutboundEvent[]> {
    const stream = bus.subjects.stream("OUT");
    const subject = bus.subjects.channel("out", ref);
    const info = await connectionOf(bus).jsm.streams.info(stream);
    const events: OutboundEvent[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await connectionOf(bus).jsm.streams.getMessage(stream, { seq });
      if (m.subject !== subject) continue;
      const r = parsePayload(validator(OutboundEvent), m.data);
      if (r.ok) events.push(r.value);
    }
    return events;
  }

  it("joins streamed deltas of one block, keeps order and numbering, loses nothing", async () => {
    const ref = { adapter: "cli", channelId: "pub" };
    const pub = new RunPublisher(bus, ref, "run-1", logger);
    const words = Array.from({ length: 200 }, (_, i) => `w${i} `);
    pub.emit({ type: "run_started", trigger: { messageId: "m", senderId: "u", username: "u", text: "t" }, model: "x/y" });
    for (const w of words.slice(0, 100)) pub.emit({ type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: w } });
    pub.emit({ type: "tool_execution_start", toolCallId: "t1", toolName: "bash", label: "L", args: {} });
    for (const w of words.slice(100)) pub.emit({ type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 1, delta: w } });
    await pub.flushed();

    const stream = bus.subjects.stream("OUT");
    const info = await connectionOf(bus).jsm.streams.info(stream);
    const events: OutboundEvent[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const r = parsePayload(validator(OutboundEvent), (await connectionOf(bus).jsm.streams.getMessage(stream, { seq })).data);
      if (r.ok) events.push(r.value);
    }
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(events.length).toBeLessThan(10);
    const types = events.map((e) => e.event.type);
    expect(types[0]).toBe("run_started");
    const toolAt = types.indexOf("tool_execution_start");
    const text = (from: number, to: number) =>
      events.slice(from, to).map((e) => (e.event.type === "message_update" ? e.event.assistantMessageEvent.delta : "")).join("");
    expect(text(1, toolAt)).toBe(words.slice(0, 100).join(""));
    expect(text(toolAt + 1, events.length)).toBe(words.slice(100).join(""));
  });

  it("puts on the bus only what a reader can use, numbered without gaps", async () => {
    const ref = { adapter: "cli", channelId: "filtered" };
    const pub = new RunPublisher(bus, ref, "run-2", logger);
    const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
    pub.emit({ type: "run_started", trigger: { messageId: "m", senderId: "u", username: "u", text: "t" }, model: "x/y" });
    pub.emit({ type: "agent_start" });
    pub.emit({ type: "turn_start" });
    pub.emit({ type: "message_start", message: { role: "user", content: [] } });
    pub.emit({ type: "message_end", message: { role: "user", content: [] } });
    pub.emit({ type: "message_update", assistantMessageEvent: { type: "text_start", contentIndex: 0 } });
    pub.emit({ type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "hi" } });
    pub.emit({ type: "message_update", assistantMessageEvent: { type: "text_end", contentIndex: 0 } });
    pub.emit({ type: "message_end", message: { role: "assistant", content: [{ type: "text", text: "hi" }] } });
    pub.emit({ type: "turn_end" });
    pub.emit({ type: "agent_end" });
    pub.emit({ type: "run_ended", stopReason: "stop", finalText: "hi", usage, durationMs: 1 });
    await pub.flushed();

    const events = await eventsOf(ref);
    // The delta "hi" was still held when the message ended with "hi": the end says it.
    expect(events.map((e) => [e.seq, e.event.type])).toEqual([
      [0, "run_started"],
      [1, "message_end"],
      [2, "run_ended"],
    ]);
  });

  it("drops only a held delta that the message's end repeats whole", async () => {
    const ref = { adapter: "cli", channelId: "superseded" };
    const pub = new RunPublisher(bus, ref, "run-3", logger);
    const delta = (text: string, contentIndex = 0) => ({ type: "message_update" as const, assistantMessageEvent: { type: "text_delta", contentIndex, delta: text } });
    const end = (...texts: string[]) => ({ type: "message_end" as const, message: { role: "assistant", content: texts.map((text) => ({ type: "text", text })) } });
    pub.emit(delta("Hello "));
    await new Promise((r) => setTimeout(r, DELTA_WINDOW_MS + 30)); // released on its own
    pub.emit(delta("world"));
    pub.emit(end("Hello world")); // "world" is dropped, "Hello " stays
    const long = "y".repeat(MAX_EVENT_TEXT + 10);
    pub.emit(delta(long.slice(0, 100), 0));
    pub.emit(end(`${long.slice(0, MAX_EVENT_TEXT)}\n…[10 more characters]`)); // cut for the bus: the delta stays
    pub.emit(delta("other block", 1));
    pub.emit(end("different text")); // not this block's text: the delta stays
    await pub.flushed();

    const seen = (await eventsOf(ref)).map((e) => (e.event.type === "message_update" ? `delta:${e.event.assistantMessageEvent.delta!.length}` : e.event.type));
    expect(seen).toEqual(["delta:6", "message_end", "delta:100", "message_end", "delta:11", "message_end"]);
  });

  it("joins deltas only up to a bound, so a fast long answer still travels in events that fit", async () => {
    const ref = { adapter: "cli", channelId: "pub-long" };
    const pub = new RunPublisher(bus, ref, "run-long", logger);
    const piece = "x".repeat(10_000);
    for (let i = 0; i < 120; i++) pub.emit({ type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: piece } });
    await pub.flushed();
    const stream = bus.subjects.stream("OUT");
    const info = await connectionOf(bus).jsm.streams.info(stream);
    const deltas: string[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await connectionOf(bus).jsm.streams.getMessage(stream, { seq });
      const r = parsePayload(validator(OutboundEvent), m.data);
      if (r.ok && r.value.runId === "run-long" && r.value.event.type === "message_update") deltas.push(r.value.event.assistantMessageEvent.delta ?? "");
    }
    expect(deltas.join("")).toBe(piece.repeat(120));
    expect(Math.max(...deltas.map((d) => d.length))).toBeLessThanOrEqual(20_000);
  });

  it("a run's start and end announced again (a new owner, REANNOUNCED_SEQ) land only where the first owner's never did", async () => {
    const ref = { adapter: "cli", channelId: "again" };
    const trigger = { messageId: "m", senderId: "u", username: "u", text: "t" };
    const announce = async (runId: string, seq?: number) => {
      const pub = new RunPublisher(bus, ref, runId, logger, 0, seq);
      pub.emit({ type: "run_started", trigger, model: "x/y" });
      pub.emit({ type: "run_ended", stopReason: "stop", finalText: "ok", usage: ZERO_USAGE, durationMs: 1 });
      await pub.flushed();
    };
    await announce("run-whole");
    await announce("run-whole", REANNOUNCED_SEQ);
    // The first owner's start never got out: only the announcement is on the stream.
    await announce("run-cut", REANNOUNCED_SEQ);
    expect((await eventsOf(ref)).map((e) => [e.runId, e.seq, e.event.type])).toEqual([
      ["run-whole", 0, "run_started"],
      ["run-whole", 1, "run_ended"],
      ["run-cut", REANNOUNCED_SEQ, "run_started"],
      ["run-cut", REANNOUNCED_SEQ + 1, "run_ended"],
    ]);
  });

  it("keeps a run's events in order on the stream when one publish has to be retried", async () => {
    // The first attempt at run_started is lost (as with a connection that dies under it); the
    // events after it must not land first.
    const flaky = Object.create(bus) as Bus;
    let lost = false;
    Object.defineProperty(flaky, "js", {
      value: new Proxy(connectionOf(bus).js, {
        get: (js, key) =>
          key !== "publish"
            ? Reflect.get(js, key)
            : async (...args: Parameters<JetStreamClient["publish"]>) => {
                if (!lost && args[2]?.msgID === "run-order:start") {
                  lost = true;
                  await new Promise((r) => setTimeout(r, 100));
                  throw new Error("connection lost");
                }
                return js.publish(...args);
              },
      }),
    });
    const ref = { adapter: "cli", channelId: "order" };
    const pub = new RunPublisher(flaky, ref, "run-order", logger, 10_000);
    pub.emit({ type: "run_started", trigger: { messageId: "m", senderId: "u", username: "u", text: "t" }, model: "x/y" });
    pub.emit({ type: "tool_execution_start", toolCallId: "t1", toolName: "bash", label: "L", args: {} });
    pub.emit({ type: "run_ended", stopReason: "stop", finalText: "ok", usage: ZERO_USAGE, durationMs: 1 });
    await pub.flushed();
    expect(lost).toBe(true);
    expect(pub.lostEvents).toBe(0);
    expect((await eventsOf(ref)).map((e) => `${e.seq} ${e.event.type}`)).toEqual(["0 run_started", "1 tool_execution_start", "2 run_ended"]);
  });
});
