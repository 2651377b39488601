import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { DeadLetter, parsePayload, validator } from "@mom/contracts";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startStack, type Stack } from "../support/stack.js";
import { outboundEvents } from "../support/streams.js";
import { connectionOf } from "../../libs/bus/src/bus.js"; // the NATS handles behind a Bus: tests and benches only

const channelDir = (s: Stack) => join(s.loaded.paths.workspaceDir, "channels", "cli", "local");
const readJsonl = (file: string) => readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));

describe("terminal chat end to end (real NATS, fake LLM, runner + CLI ingress)", () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("answers a line after running bash, with progress, log.jsonl and context.jsonl", async () => {
    s.llm.enqueue(
      { toolCalls: [{ name: "bash", arguments: { label: "Count the files", command: "echo bash-says-$((40+2))" } }] },
      { text: "The answer is **42**.", usage: { input: 120, output: 8 } },
    );
    s.type("what is the answer?");
    await s.output.waitFor("The answer is **42**.");
    await s.output.waitFor(/\$\?/);

    expect(s.output.text).toContain("working…");
    expect(s.output.text).toContain("→ Count the files");
    expect(s.output.text).toMatch(/✓ Count the files \([\d.]+ m?s\)/);

    // the model saw the tool result in its second request
    const second = JSON.stringify(s.llm.requests[1]!.messages);
    expect(second).toContain("bash-says-42");
    expect(JSON.stringify(s.llm.requests[0]!.messages)).toContain("[@tester]: what is the answer?");

    const log = readJsonl(join(channelDir(s), "log.jsonl"));
    expect(log.map((e) => [e.userName, e.text])).toEqual([
      ["tester", "what is the answer?"],
      ["mom", "The answer is **42**."],
    ]);
    const context = readFileSync(join(channelDir(s), "context.jsonl"), "utf8");
    expect(context).toContain("bash-says-42");
    expect(context).toContain("The answer is **42**.");

    const events = await outboundEvents(s.bus);
    const types = events.map((e) => e.event.type);
    expect(types[0]).toBe("run_started");
    expect(types.at(-1)).toBe("run_ended");
    // The fake answers at once: each message's end carries its text before a delta window passed.
    expect(types).toEqual(expect.arrayContaining(["tool_execution_start", "tool_execution_end", "message_end"]));
    expect(new Set(events.map((e) => e.runId)).size).toBe(1);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    const end = events.at(-1)!.event;
    expect(end).toMatchObject({ type: "run_ended", stopReason: "stop", finalText: "The answer is **42**." });
  });

  it("streams the answer into the terminal as the model writes it, and prints it once", async () => {
    s.output.text = "";
    // Words a second apart: the first are on screen while the model still writes the rest.
    s.llm.enqueue({ text: "Streaming words arrive one by one here.", chunkDelayMs: 1000 });
    s.type("stream something");
    await s.output.waitFor("Streaming words");
    expect(s.output.text).not.toContain("here.");
    expect(s.output.text).not.toMatch(/\$\?/);
    await s.output.waitFor(/\$\?/);
    expect(s.output.text.split("Streaming words arrive one by one here.").length).toBe(2);
  });

  it("`stop` aborts a running run at once", async () => {
    s.output.text = "";
    s.llm.enqueue({ hang: true });
    const before = s.llm.requests.length;
    s.type("do something slow");
    await s.llm.waitForRequests(before + 1);
    s.type("stop");
    await s.output.waitFor("■ Stopped");
    expect(s.output.text).not.toContain("✗ Error");
  });

  it("queues messages sent during a run and answers them in order", async () => {
    s.output.text = "";
    s.llm.enqueue({ text: "first answer", delayMs: 1500 }, (req) => ({ text: `second answer after ${req.messages.length} messages` }));
    s.type("one");
    await s.output.waitFor("working…");
    s.type("two");
    await s.output.waitFor(/second answer/);
    const out = s.output.text;
    expect(out).toContain("queued behind the current run (position 1)");
    expect(out.indexOf("first answer")).toBeLessThan(out.indexOf("second answer"));
    // the second run's context holds the first exchange
    const last = JSON.stringify(s.llm.requests.at(-1)!.messages);
    expect(last).toContain("first answer");
    expect(last).toContain("[@tester]: two");
  });

  it("dead-letters an invalid payload on mom.in and keeps answering", async () => {
    s.output.text = "";
    const subject = s.bus.subjects.channel("in", { adapter: "cli", channelId: "local" });
    await s.bus.publish(subject, { hello: "not a ChannelMessage" }, "bad-1");
    await connectionOf(s.bus).nc.publish(subject, "{not json");
    s.llm.enqueue({ text: "still here" });
    s.type("are you alive?");
    await s.output.waitFor("still here");

    const dlq = s.bus.subjects.stream("DLQ");
    const info = await connectionOf(s.bus).jsm.streams.info(dlq);
    expect(info.state.messages).toBeGreaterThanOrEqual(2);
    const letters = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await connectionOf(s.bus).jsm.streams.getMessage(dlq, { seq });
      const r = parsePayload(validator(DeadLetter), m.data);
      if (r.ok) letters.push(r.value);
    }
    expect(letters.find((l) => l.msgId === "bad-1")).toMatchObject({ stage: "agent-runner", subject, reason: expect.stringMatching(/required properties id.*unknown properties "hello"/) });
    expect(letters.find((l) => l.payload === "{not json")).toMatchObject({ reason: expect.stringContaining("invalid JSON") });
  });

  it("an abort on mom.ctl stops the run", async () => {
    s.output.text = "";
    s.llm.enqueue({ hang: true });
    const before = s.llm.requests.length;
    s.type("another slow one");
    await s.llm.waitForRequests(before + 1);
    await s.bus.publish(s.bus.subjects.channel("ctl", { adapter: "cli", channelId: "local" }), { type: "abort", ts: new Date().toISOString(), requestedBy: { id: "u-tester", username: "tester" } }, "abort-1");
    await s.output.waitFor("■ Stopped");
  });

  it("a provider error ends the run with the error, not silence", async () => {
    s.output.text = "";
    s.llm.enqueue({ error: { status: 400, message: "model is on fire" } });
    s.type("break please");
    await s.output.waitFor("✗ Error:");
    expect(s.output.text).toContain("model is on fire");
  });
});
