import { afterEach, describe, expect, it } from "@jest/globals";
import { SUB_AGENT_PROMPT_START } from "@mom/agent";
import { usageReport } from "@mom/cli";
import type { Receipt, UsageRecord } from "@mom/contracts";
import type { FakeRequest } from "@mom/testing";
import { openLedgerStream, validRecords } from "@mom/usage";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startStack, type Stack } from "../support/stack.js";
import { channelReceipts } from "../support/receipts.js";
import { outboundEvents } from "../support/streams.js";

// Sub-agents through a real runner over real NATS, the child's tools in the channel's sandbox. The
// fake model serves parent and child from one queue, in order; a child's requests carry its own
// system prompt, which is how the assertions tell them apart.
let s: Stack | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

const isChild = (r: FakeRequest) => JSON.stringify(r.messages[0]).includes(SUB_AGENT_PROMPT_START);
const toolsOf = (r: FakeRequest) => ((r.body.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name).sort();
const lastMessage = (r: FakeRequest) => JSON.parse(JSON.stringify(r.messages.at(-1))) as { content: string | { text?: string }[] };
const lastText = (r: FakeRequest) => {
  const c = lastMessage(r).content;
  return typeof c === "string" ? c : c.map((p) => p.text ?? "").join("");
};
const spawn = (args: Record<string, unknown>) => ({ toolCalls: [{ name: "spawn", arguments: { label: "Hand it to a sub-agent", ...args } }] });
const bash = (command: string, label = "Run it") => ({ name: "bash", arguments: { label, command } });

const receipts = (st: Stack) => channelReceipts(st);
const typesOf = (rs: Receipt[], toolCallId: string) => rs.filter((r) => r.toolCallId === toolCallId).map((r) => r.type);

async function until(what: string, ok: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("spawn: sub-agents through a real runner", () => {
  it("a child does the task with its own tools and context; its answer is the spawn result; its calls and usage are the parent run's", async () => {
    s = await startStack();
    s.llm.enqueue(
      { ...spawn({ task: "Write 42 into answer.txt, read it back and tell me what it holds", tools: ["bash", "read"] }), usage: { input: 1_000, output: 10 } },
      { toolCalls: [bash("echo 42 > answer.txt", "Write the answer")], usage: { input: 2_000, output: 20 } },
      { toolCalls: [{ name: "read", arguments: { label: "Read it back", path: "answer.txt" } }], usage: { input: 3_000, output: 30 } },
      { text: "answer.txt holds 42.", usage: { input: 4_000, output: 40 } },
      { text: "The sub-agent found 42.", usage: { input: 5_000, output: 50 } },
    );
    s.type("what is the answer?");
    await s.output.waitForAnswer("The sub-agent found 42.");
    const rq = s.llm.requests;
    expect(rq.map(isChild)).toEqual([false, true, true, true, false]);
    // The child: its own prompt and only its tools, the task as its one message, nothing of the chat.
    expect(toolsOf(rq[1]!)).toEqual(["bash", "read"]);
    expect(toolsOf(rq[0]!)).toContain("spawn");
    expect(rq[1]!.messages).toHaveLength(2);
    expect(JSON.stringify(rq[1]!.messages[1])).toContain("Write 42 into answer.txt");
    expect(JSON.stringify(rq[1]!.messages)).not.toContain("what is the answer?");
    expect(lastText(rq[3]!)).toContain("42");
    // Its answer is the parent's tool result.
    expect(lastText(rq[4]!)).toMatch(/^answer\.txt holds 42\.\n\n\[sub-agent: 2 tool calls \(bash ✓, read ✓\); 9,090 of its 100,000 tokens; \d+ s\]/);
    expect(readFileSync(join(s.loaded.paths.workspaceDir, "channels/cli/local/answer.txt"), "utf8")).toBe("42\n");

    // Receipts: the spawn call (risk read), and the child's calls under the parent's runId, marked with it.
    const rs = receipts(s);
    const runId = rs.find((r) => r.toolId === "spawn")!.runId;
    expect(typesOf(rs, "call_1_0")).toEqual(["tool.call.requested", "tool.call.started", "tool.call.succeeded"]);
    expect(rs.filter((r) => r.toolCallId === "call_1_0").every((r) => r.risk === "read")).toBe(true);
    for (const id of ["call_1_0.call_2_0", "call_1_0.call_3_0"]) expect(typesOf(rs, id)).toEqual(["tool.call.requested", "tool.call.started", "tool.call.succeeded"]);
    const child = rs.filter((r) => r.parentToolCallId === "call_1_0");
    expect(new Set(child.map((r) => r.toolId))).toEqual(new Set(["bash", "read"]));
    expect(rs.every((r) => r.runId === runId)).toBe(true);

    // Usage: the run's five model calls, the child's three among them, all under its runId.
    const ended = (await outboundEvents(s.bus)).map((e) => e.event).filter((e) => e.type === "run_ended").at(-1) as { usage: { input: number; output: number }; toolActivity?: { toolCallId: string }[] };
    expect(ended.usage).toMatchObject({ input: 15_000, output: 150 });
    expect(ended.toolActivity?.map((a) => a.toolCallId)).toEqual(expect.arrayContaining(["call_1_0", "call_1_0.call_2_0"]));
    const ledger = await openLedgerStream(s.bus);
    const { records } = validRecords(await ledger.readSince(new Date(Date.now() - 3_600_000)));
    expect((records as UsageRecord[]).map((r) => [r.runId, r.input])).toEqual([1_000, 2_000, 3_000, 4_000, 5_000].map((n) => [runId, n]));
    expect(await usageReport(["--data", s.dataDir])).toMatch(/cli\/local\s+5\s+15,000\s+150\s/);
  }, 60_000);

  it("a child over its token budget is cut off before the call that would cross it, with what it had so far", async () => {
    s = await startStack();
    s.llm.enqueue(
      spawn({ task: "Count the TODOs in the code", tools: ["bash"], maxTokens: 5_000 }),
      { text: "Found 3 TODOs so far.", toolCalls: [bash("echo more")], usage: { input: 4_500, output: 600 } },
      { text: "It ran out of budget after 3 TODOs." },
    );
    s.type("count the todos");
    await s.output.waitForAnswer("It ran out of budget after 3 TODOs.");
    const rq = s.llm.requests;
    // No child call past its budget: the parent was asked next.
    expect(rq.map(isChild)).toEqual([false, true, false]);
    expect(lastText(rq[2]!)).toMatch(
      /^Sub-agent stopped: used its budget of 5,000 tokens \(5,100 used; its next model call needed about [\d,]+\)\.\nWhat it had so far:\nFound 3 TODOs so far\.\n\n\[sub-agent: 1 tool call \(bash ✓\); 5,100 of its 5,000 tokens; \d+ s\]/,
    );
    const rs = receipts(s);
    expect(typesOf(rs, "call_1_0")).toEqual(["tool.call.requested", "tool.call.started", "tool.call.failed"]);
    expect(rs.find((r) => r.toolCallId === "call_1_0" && r.type === "tool.call.failed")!.detail).toMatch(/^Sub-agent stopped: used its budget of 5,000 tokens/);
    expect(typesOf(rs, "call_1_0.call_2_0")).toEqual(["tool.call.requested", "tool.call.started", "tool.call.succeeded"]);
  }, 60_000);

  it("a child's model calls count toward the channel's spend limit, which stops it too", async () => {
    s = await startStack({ config: { limits: { channels: { "cli/local": { day: { tokens: 30_000 } } } } } });
    s.llm.enqueue(
      spawn({ task: "Read everything", tools: ["bash"] }),
      { text: "Read half.", toolCalls: [bash("echo half")], usage: { input: 40_000, output: 10 } },
      { text: "never asked" },
    );
    s.type("read it all");
    await s.output.waitFor(/✗ Error: Token limit reached: this channel \(cli\/local\) has used 4\d,\d{3} tokens of its 30,000 tokens daily budget/);
    const rq = s.llm.requests;
    expect(rq.map(isChild)).toEqual([false, true]);
    const failed = receipts(s).find((r) => r.toolCallId === "call_1_0" && r.type === "tool.call.failed")!;
    expect(failed.detail).toMatch(/^Sub-agent failed: Token limit reached: this channel \(cli\/local\) has used 4\d,\d{3} tokens/);
  }, 60_000);

  it("a child over its time budget is cut off, its running command with it", async () => {
    s = await startStack();
    s.llm.enqueue(
      spawn({ task: "Wait for the build", tools: ["bash"], timeoutSeconds: 2 }),
      { text: "Waiting for the build.", toolCalls: [bash("sleep 30", "Wait for the build")] },
      { text: "The build took too long." },
    );
    const t0 = Date.now();
    s.type("wait for the build");
    await s.output.waitForAnswer("The build took too long.");
    expect(Date.now() - t0).toBeLessThan(15_000);
    const rq = s.llm.requests;
    expect(rq.map(isChild)).toEqual([false, true, false]);
    expect(lastText(rq[2]!)).toMatch(/^Sub-agent stopped: ran out of its time budget of 2 s\.\nWhat it had so far:\nWaiting for the build\.\n\n\[sub-agent: 1 tool call \(bash ✗\)/);
    const rs = receipts(s);
    expect(typesOf(rs, "call_1_0.call_2_0")).toEqual(["tool.call.requested", "tool.call.started", "tool.call.failed"]);
    expect(typesOf(rs, "call_1_0")).toEqual(["tool.call.requested", "tool.call.started", "tool.call.failed"]);
  }, 60_000);

  it("a child gets no tool policy denies the channel, and a tool outside its subset is denied with a receipt", async () => {
    s = await startStack({ config: { policy: { channels: { "cli/local": { deny: ["write"] } } } } });
    s.llm.enqueue(
      spawn({ task: "Fix the typo in README", tools: ["read", "write"] }),
      spawn({ task: "Look at README", tools: ["read"] }),
      { toolCalls: [bash("cat /etc/passwd", "Look around")] },
      { text: "I may only read files." },
      { text: "done" },
    );
    s.type("fix it");
    await s.output.waitForAnswer("done");
    const rq = s.llm.requests;
    expect(rq.map(isChild)).toEqual([false, false, true, true, false]);
    // A tool policy hides from the parent cannot be given to the child.
    expect(lastText(rq[1]!)).toMatch(/^a sub-agent here may have only [a-z_, ]+; write is not among them/);
    expect(lastText(rq[1]!)).not.toMatch(/only [^;]*\bwrite\b/);
    // The child sees only read; its bash call is refused and recorded under the parent run.
    expect(toolsOf(rq[2]!)).toEqual(["read"]);
    expect(lastText(rq[3]!)).toContain("Tool bash not found");
    const rs = receipts(s);
    const denied = rs.filter((r) => r.toolCallId === "call_2_0.call_3_0");
    expect(denied.map((r) => r.type)).toEqual(["tool.call.requested", "tool.call.denied"]);
    expect(denied[1]).toMatchObject({ toolId: "bash", parentToolCallId: "call_2_0", detail: "not among the sub-agent's tools", runId: rs[0]!.runId });
    expect(typesOf(rs, "call_1_0")).toEqual(["tool.call.requested", "tool.call.started", "tool.call.failed"]);
  }, 60_000);

  it("stop during the child stops both, and its command", async () => {
    s = await startStack();
    s.llm.enqueue(spawn({ task: "Run the long suite", tools: ["bash"] }), { toolCalls: [bash("sleep 30", "Run the suite")] }, { text: "never" });
    s.type("run the suite in a sub-agent");
    await until("the child's command to start", () => receipts(s!).some((r) => r.toolCallId === "call_1_0.call_2_0" && r.type === "tool.call.started"));
    const stoppedAt = Date.now();
    s.type("stop");
    await s.output.waitFor("Stopped");
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    await until("both calls to end failed", () => receipts(s!).filter((r) => r.type === "tool.call.failed").length >= 2, 5_000);
    expect(
      receipts(s)
        .filter((r) => r.type === "tool.call.failed")
        .map((r) => r.toolCallId)
        .sort(),
    ).toEqual(["call_1_0", "call_1_0.call_2_0"]);
    // Neither the child nor the parent asked the model again.
    expect(s.llm.requests).toHaveLength(2);
    expect(s.llm.pending()).toBe(1);
  }, 60_000);
});
