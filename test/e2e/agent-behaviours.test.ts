import { afterEach, describe, expect, it } from "@jest/globals";
import type { ChannelMessage } from "@mom/contracts";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BUSY_TEXT } from "@mom/agent-runner";
import { startStack, type Stack, type StackOptions } from "../support/stack.js";
import { outboundEvents } from "../support/streams.js";

// Each behaviour of issue 3 against real NATS, the real runner and CLI ingress, and a fake LLM.
let s: Stack | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});
async function stack(opts: StackOptions = {}): Promise<Stack> {
  s = await startStack(opts);
  return s;
}
const channelDir = (st: Stack) => join(st.loaded.paths.workspaceDir, "channels", "cli", "local");
const systemPrompt = (st: Stack, i: number) => JSON.stringify(st.llm.requests[i]!.messages[0]);

function message(st: Stack, text: string, extra: Partial<ChannelMessage> = {}): ChannelMessage {
  return {
    id: `m-${Math.random().toString(36).slice(2)}`,
    channelId: "local",
    timestamp: new Date().toISOString(),
    sender: { id: "u-tester", username: "tester", isBot: false },
    text,
    attachments: [],
    isMention: true,
    ...extra,
  };
}
async function publish(st: Stack, m: ChannelMessage) {
  await st.bus.publish(st.bus.subjects.channel("in", { adapter: "cli", channelId: "local" }), m, m.id);
}

describe("agent behaviours over the bus", () => {
  it("progress events carry the label, the args and the result with duration", async () => {
    const st = await stack();
    st.llm.enqueue({ toolCalls: [{ name: "bash", arguments: { label: "Show a word", command: "echo progress-word" } }] }, { text: "done" });
    st.type("go");
    await st.output.waitForAnswer("done");
    const events = (await outboundEvents(st.bus)).map((e) => e.event);
    expect(events.find((e) => e.type === "tool_execution_start")).toMatchObject({ label: "Show a word", args: { label: "Show a word", command: "echo progress-word" } });
    const end = events.find((e) => e.type === "tool_execution_end");
    expect(end).toMatchObject({ label: "Show a word", isError: false, resultText: expect.stringContaining("progress-word") });
    expect((end as { durationMs: number }).durationMs).toBeGreaterThanOrEqual(0);
  });

  it("truncates long bash output for the model and keeps all of it under scratch/", async () => {
    const st = await stack();
    st.llm.enqueue({ toolCalls: [{ name: "bash", arguments: { label: "Count far", command: "seq 1 30000" } }] }, { text: "counted" });
    st.type("count");
    await st.output.waitFor("counted");
    const toolResult = JSON.stringify(st.llm.requests[1]!.messages.at(-1));
    expect(toolResult).toContain("30000");
    expect(toolResult).not.toMatch(/\\n1\\n2\\n3\\n/);
    const scratch = join(channelDir(st), "scratch");
    const saved = readdirSync(scratch).filter((f) => f.startsWith("bash-"));
    expect(saved).toHaveLength(1);
    expect(toolResult).toContain(join(scratch, saved[0]!));
    const full = readFileSync(join(scratch, saved[0]!), "utf8").trim().split("\n");
    expect(full).toHaveLength(30000);
    expect(full[0]).toBe("1");
  });

  it("shows the head of a long file to the model with the offset to read on", async () => {
    const st = await stack();
    mkdirSync(channelDir(st), { recursive: true });
    writeFileSync(join(channelDir(st), "big.txt"), Array.from({ length: 5000 }, (_, i) => `line ${i + 1}`).join("\n"));
    st.llm.enqueue({ toolCalls: [{ name: "read", arguments: { label: "Read the big file", path: "big.txt" } }] }, { text: "read it" });
    st.type("read big.txt");
    await st.output.waitFor("read it");
    const toolResult = JSON.stringify(st.llm.requests[1]!.messages.at(-1));
    expect(toolResult).toContain("line 1\\n");
    expect(toolResult).not.toContain("line 5000");
    expect(toolResult).toMatch(/offset=\d+/);
  });

  it("puts memory and skills (channel wins on a clash) in the system prompt", async () => {
    const st = await stack();
    const ws = st.loaded.paths.workspaceDir;
    const skill = (dir: string, name: string, description: string) => {
      mkdirSync(join(dir, name), { recursive: true });
      writeFileSync(join(dir, name, "SKILL.md"), `---\nname: ${name}\ndescription: ${description}\n---\nDo it.\n`);
    };
    skill(join(ws, "skills"), "deploy", "Global deploy recipe");
    skill(join(ws, "skills"), "weather", "Fetch the weather");
    skill(join(channelDir(st), "skills"), "deploy", "Channel deploy recipe");
    writeFileSync(join(ws, "MEMORY.md"), "Global: the office is in Vienna.");
    writeFileSync(join(channelDir(st), "MEMORY.md"), "Channel: releases happen on Tuesdays.");
    st.llm.enqueue({ text: "noted" });
    st.type("hello");
    await st.output.waitFor("noted");
    const prompt = systemPrompt(st, 0);
    expect(prompt).toContain("Global: the office is in Vienna.");
    expect(prompt).toContain("Channel: releases happen on Tuesdays.");
    expect(prompt).toContain("Channel deploy recipe");
    expect(prompt).toContain("Fetch the weather");
    expect(prompt).not.toContain("Global deploy recipe");
    expect(prompt).toContain("SKILL.md");
    // the prompt describes the workspace, the sandbox, the event files and the log
    for (const needle of ["Workspace layout", "Sandbox", "one-shot", "periodic", "log.jsonl", "scratch/"]) expect(prompt).toContain(needle);
  });

  it("keeps replyTo through the run so the answer goes to the thread", async () => {
    const st = await stack();
    st.llm.enqueue({ text: "in the thread" });
    await publish(st, message(st, "@mom threaded question", { replyTo: "thread-42" }));
    await st.output.waitForAnswer("in the thread");
    const events = (await outboundEvents(st.bus)).map((e) => e.event);
    expect(events.find((e) => e.type === "run_started")).toMatchObject({ replyTo: "thread-42" });
    expect(events.find((e) => e.type === "run_ended")).toMatchObject({ replyTo: "thread-42", finalText: "in the thread" });
    const log = readFileSync(join(channelDir(st), "log.jsonl"), "utf8");
    expect(log).toContain('"replyTo":"thread-42"');
  });

  it("busy mode reject tells the sender mom is busy", async () => {
    const st = await stack({ config: { adapters: { cli: { type: "cli", busy: "reject" } } } });
    st.llm.enqueue({ text: "slow answer", delayMs: 1000 });
    st.type("first");
    await st.output.waitFor("working…");
    st.type("second");
    await st.output.waitFor(BUSY_TEXT);
    await st.output.waitFor("slow answer");
    await new Promise((r) => setTimeout(r, 300));
    expect(st.llm.requests).toHaveLength(1);
  });

  it("busy mode steer injects the message into the running run", async () => {
    const st = await stack({ config: { adapters: { cli: { type: "cli", busy: "steer" } } } });
    st.llm.enqueue({ toolCalls: [{ name: "bash", arguments: { label: "Wait a bit", command: "sleep 1" } }] }, { text: "handled both" });
    st.type("start something");
    await st.output.waitFor("→ Wait a bit");
    st.type("also do this");
    await st.output.waitForAnswer("handled both");
    expect(JSON.stringify(st.llm.requests[1]!.messages)).toContain("[@tester]: also do this");
    await new Promise((r) => setTimeout(r, 300));
    expect(st.llm.requests).toHaveLength(2);
    const runs = new Set((await outboundEvents(st.bus)).map((e) => e.runId));
    expect(runs.size).toBe(1);
  });

  it("reports provider retries and compaction to the adapter", async () => {
    const st = await stack();
    st.llm.enqueue(
      { error: { status: 503, message: "overloaded, try later" } },
      { text: "recovered", usage: { input: 120_000, output: 10 } },
      { text: "## Summary\nThe user asked for something." },
    );
    st.type("please");
    await st.output.waitFor("recovered", 20_000);
    expect(st.output.text).toMatch(/↻ provider error, retry 1\/3/);
    const waitForTypes = async (types: string[]) => {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const seen = (await outboundEvents(st.bus)).map((e) => e.event.type);
        if (types.every((t) => seen.includes(t as never))) return seen;
        if (Date.now() > deadline) throw new Error(`missing ${types} in ${seen}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await waitForTypes(["auto_retry_start", "auto_retry_end", "compaction_start", "compaction_end"]);
  }, 40_000);

  it("run_ended carries tokens, context use and cost", async () => {
    const st = await stack({
      models: (json) => {
        json.providers.fake!.models[0]!.cost = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
        json.providers.fake!.models[0]!.contextWindow = 200_000;
        return json;
      },
    });
    st.llm.enqueue({ text: "priced", usage: { input: 1000, output: 200, cacheRead: 500 } });
    st.type("how much?");
    await st.output.waitForAnswer("priced");
    const ended = (await outboundEvents(st.bus)).map((e) => e.event).find((e) => e.type === "run_ended") as { usage: Record<string, unknown> & { cost: { total: number } } };
    expect(ended.usage).toMatchObject({ input: 1000, output: 200, cacheRead: 500, contextWindow: 200_000 });
    expect(ended.usage.contextTokens).toBeGreaterThan(0);
    expect(ended.usage.cost.total).toBeCloseTo((1000 * 3 + 200 * 15 + 500 * 0.3) / 1e6, 8);
    expect(st.output.text).toMatch(/1,000 in · 200 out · cache 500 read/);
  });

  it("scheduled events trigger runs, and [SILENT] posts nothing", async () => {
    const st = await stack();
    st.llm.enqueue({ text: "[SILENT]" });
    const event = message(st, "[EVENT:inbox.json:periodic:*/5 * * * *] Check the inbox", {
      sender: { id: "scheduler", username: "scheduler", isBot: true },
      metadata: { event: { file: "inbox.json", type: "periodic", schedule: "*/5 * * * *" } },
    });
    await publish(st, event);
    await st.llm.waitForRequests(1);
    const deadline = Date.now() + 10_000;
    let ended: { type: string; silent?: boolean; finalText?: string } | undefined;
    while (!ended && Date.now() < deadline) {
      ended = (await outboundEvents(st.bus)).map((e) => e.event).find((e) => e.type === "run_ended");
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(ended).toMatchObject({ silent: true, finalText: "" });
    expect(st.output.text).not.toContain("SILENT");
    expect(JSON.stringify(st.llm.requests[0]!.messages)).toContain("[@scheduler]: [EVENT:inbox.json:periodic");
  });

  it("uses the model and thinking level configured for the channel", async () => {
    const st = await stack({
      config: { channels: { "cli/local": { model: "fake/fake-model-2" }, "cli/elsewhere": { model: "fake/fake-model" } } },
      models: (json) => {
        json.providers.fake!.models.push({ ...json.providers.fake!.models[0], id: "fake-model-2", name: "Fake 2" });
        return json;
      },
    });
    st.llm.enqueue({ text: "from model two" });
    st.type("which model?");
    await st.output.waitForAnswer("from model two");
    expect(st.llm.requests[0]!.model).toBe("fake-model-2");
    const started = (await outboundEvents(st.bus)).map((e) => e.event).find((e) => e.type === "run_started");
    expect(started).toMatchObject({ model: "fake/fake-model-2" });
    expect(existsSync(join(channelDir(st), "context.jsonl"))).toBe(true);
  });
});
