import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Context, fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider, type FauxProviderRegistration } from "@mariozechner/pi-ai";
import { AuthStorage, ModelRegistry } from "@mariozechner/pi-coding-agent";
import type { LogEntry, OutboundEventBody } from "@mom/contracts";
import { defaultConfig, type SpawnConfig } from "@mom/config";
import { Sandbox } from "@mom/sandbox";
import { WorkspaceLayout } from "@mom/store";
import type { GateCall, ToolGate } from "@mom/tools";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChannelAgent } from "../channel-agent.js";
import { MOM_TOOL_NAMES } from "../labelled-tools.js";
import { SUB_AGENT_PROMPT_START } from "./sub-agent-prompt.js";

const entry = (id: string, text: string): LogEntry => ({ id, date: new Date().toISOString(), user: "U1", userName: "mario", text, attachments: [], isBot: false, isMention: true });
const isChild = (ctx: Context) => (ctx.systemPrompt ?? "").startsWith(SUB_AGENT_PROMPT_START);
const toolNames = (ctx: Context) => (ctx.tools ?? []).map((t) => t.name);
const lastText = (ctx: Context) => JSON.stringify(ctx.messages.at(-1));
const spawnCall = (args: Record<string, unknown>, id = "sp1") => fauxAssistantMessage([fauxToolCall("spawn", { label: "Delegate", ...args }, { id })], { stopReason: "toolUse" });

describe("spawn: a sub-agent in its own session", () => {
  let dir: string;
  let faux: FauxProviderRegistration;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "mom-spawn-"));
    faux = registerFauxProvider({ provider: "faux-spawn", models: [{ id: "m1", contextWindow: 100_000 }] });
  });
  afterAll(() => {
    faux.unregister();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A channel whose every tool call is recorded by a gate that lets it through; `deny` ids are refused as policy would. */
  async function setup(o: { limits?: Partial<SpawnConfig>; active?: string[]; deny?: string[] } = {}) {
    const layout = new WorkspaceLayout(join(dir, "workspace"));
    await layout.ensureWorkspace();
    const store = layout.channel({ adapter: "cli", channelId: `c${Math.random().toString(36).slice(2)}` });
    const sandbox = new Sandbox({ type: "bwrap" }, { dataDir: dir, workspaceDir: layout.workspaceDir }).forChannel(store.dir, [store.logFile, store.contextFile, store.receiptsFile]);
    const authStorage = AuthStorage.inMemory();
    authStorage.setRuntimeApiKey("faux-spawn", "k");
    const calls: GateCall[] = [];
    const ended: string[] = [];
    const hidden: [string, string, string][] = [];
    const gate: ToolGate = {
      run: async (call, signal, fn) => {
        calls.push(call);
        if (o.deny?.includes(call.toolId)) throw new Error(`${call.toolId} was not run: denied by policy`);
        try {
          return await fn(signal ?? new AbortController().signal);
        } finally {
          ended.push(call.toolCallId);
        }
      },
    };
    const agent = await ChannelAgent.create({
      qualifiedChannelId: "cli/test",
      workspaceDir: layout.workspaceDir,
      store,
      sandbox,
      resolved: { model: faux.getModel() as never, authStorage, modelRegistry: ModelRegistry.inMemory(authStorage) },
      agentDir: join(dir, "pi"),
      gate,
      activeTools: () => o.active ?? [...MOM_TOOL_NAMES, "spawn"],
      spawn: {
        limits: { ...defaultConfig().spawn, ...o.limits },
        onHiddenTool: async (toolCallId, toolId, spawnCallId) => void hidden.push([toolCallId, toolId, spawnCallId]),
      },
    });
    return { store, agent, calls, ended, hidden };
  }

  async function run(agent: ChannelAgent, text = "@mom go") {
    const events: OutboundEventBody[] = [];
    const outcome = await agent.run(entry(`m${Math.random()}`, text), (e) => events.push(e));
    return { outcome, events };
  }

  it("a child with only read does the task in its own context; its answer is the spawn call's result, its calls pass the parent's gate marked with the spawn call", async () => {
    const { store, agent, calls } = await setup();
    writeFileSync(join(store.dir, "notes.txt"), "ship on Friday");
    let childPrompt = "";
    let childTools: string[] = [];
    let childFirst = "";
    let parentSaw = "";
    faux.setResponses([
      spawnCall({ task: "Read notes.txt and say what it says", tools: ["read"] }),
      (ctx) => {
        childPrompt = ctx.systemPrompt ?? "";
        childTools = toolNames(ctx);
        childFirst = JSON.stringify(ctx.messages);
        return fauxAssistantMessage([fauxToolCall("read", { label: "Read the notes", path: "notes.txt" }, { id: "r1" })], { stopReason: "toolUse" });
      },
      (ctx) => fauxAssistantMessage([fauxText(isChild(ctx) && lastText(ctx).includes("ship on Friday") ? "The notes say: ship on Friday." : "wrong context")]),
      (ctx) => {
        parentSaw = lastText(ctx);
        return fauxAssistantMessage([fauxText(isChild(ctx) ? "wrong" : "Friday it is.")]);
      },
    ]);
    const { outcome, events } = await run(agent);
    expect(outcome).toMatchObject({ stopReason: "stop", finalText: "Friday it is." });
    expect(childPrompt.startsWith(SUB_AGENT_PROMPT_START)).toBe(true);
    expect(childPrompt).toContain("Tools: read. You have no others.");
    expect(childTools).toEqual(["read"]);
    // The child starts from the task alone: nothing of the channel's conversation.
    expect(childFirst).toContain("Read notes.txt and say what it says");
    expect(childFirst).not.toContain("@mom go");
    expect(parentSaw).toContain("The notes say: ship on Friday.");
    expect(parentSaw).toMatch(/\[sub-agent: 1 tool call \(read ✓\); [\d,]+ of its 100,000 tokens; \d+ s\]/);
    expect(calls.map((c) => [c.toolId, c.toolCallId, c.parentToolCallId, c.risk])).toEqual([
      ["spawn", "sp1", undefined, "read"],
      ["read", "sp1.r1", "sp1", "read"],
    ]);
    // The chat sees the child's progress as the spawn call's output.
    expect(events).toContainEqual(expect.objectContaining({ type: "tool_execution_update", toolName: "spawn" }));
    agent.dispose();
  });

  it("the run's usage counts the child's model calls", async () => {
    const { agent } = await setup();
    const usages: number[] = [];
    faux.setResponses([spawnCall({ task: "Say hi", tools: ["read"] }), fauxAssistantMessage([fauxText("hi")]), fauxAssistantMessage([fauxText("done")])]);
    const { outcome, events } = await run(agent);
    for (const e of events) {
      const m = e.type === "message_end" ? (e.message as { role: string; usage?: { totalTokens: number } }) : undefined;
      if (m?.role === "assistant" && m.usage) usages.push(m.usage.totalTokens);
    }
    expect(usages).toHaveLength(2);
    // Parent: two calls; child: one. The child's calls are not parent messages, yet count.
    const parentOnly = usages.reduce((a, b) => a + b, 0);
    expect(outcome.usage.totalTokens).toBeGreaterThan(parentOnly);
    agent.dispose();
  });

  it("a child cannot get a tool the parent lacks, spawn, or attach; a tool outside its subset is denied", async () => {
    const { agent, calls, hidden } = await setup({ active: ["read", "write", "spawn"] });
    let refused = "";
    faux.setResponses([
      spawnCall({ task: "t", tools: ["read", "bash"] }, "sp1"),
      (ctx) => {
        refused = lastText(ctx);
        return spawnCall({ task: "t", tools: ["spawn"] }, "sp2");
      },
      (ctx) => {
        refused += lastText(ctx);
        return spawnCall({ task: "try bash", tools: ["read"] }, "sp3");
      },
      fauxAssistantMessage([fauxToolCall("bash", { label: "Escape", command: "id" }, { id: "b1" })], { stopReason: "toolUse" }),
      (ctx) => fauxAssistantMessage([fauxText(lastText(ctx).includes("Tool bash not found") ? "bash is not mine" : "??")]),
      fauxAssistantMessage([fauxText("ok")]),
    ]);
    const { outcome } = await run(agent);
    expect(outcome.finalText).toBe("ok");
    expect(refused).toContain("a sub-agent here may have only read, write; bash is not among them");
    expect(refused).toContain("a sub-agent here may have only read, write; spawn is not among them");
    // bash never reached the gate; the denial is recorded against the spawn call.
    expect(calls.map((c) => c.toolId)).toEqual(["spawn", "spawn", "spawn"]);
    expect(hidden).toEqual([["sp3.b1", "bash", "sp3"]]);
    agent.dispose();
  });

  it("a child over its token budget is stopped before the call that would cross it, with what it had so far", async () => {
    const { store, agent } = await setup();
    // ~12,000 tokens of file: the call after reading it needs far more than the budget left.
    writeFileSync(join(store.dir, "big.txt"), "word ".repeat(10_000));
    let parentSaw = "";
    faux.setResponses([
      spawnCall({ task: "Summarise big.txt", tools: ["read"], maxTokens: 6_000 }),
      fauxAssistantMessage([fauxText("Reading it now."), fauxToolCall("read", { label: "Read", path: "big.txt" }, { id: "r1" })], { stopReason: "toolUse" }),
      (ctx) => {
        parentSaw = lastText(ctx);
        return fauxAssistantMessage([fauxText(isChild(ctx) ? "the child went on" : "It ran out.")]);
      },
    ]);
    const { outcome, events } = await run(agent);
    expect(outcome.finalText).toBe("It ran out.");
    expect(parentSaw).toMatch(/Sub-agent stopped: used its budget of 6,000 tokens \([\d,]+ used; its next model call needed about [\d,]+\)\.\\nWhat it had so far:\\nReading it now\./);
    const end = events.find((e) => e.type === "tool_execution_end" && e.toolName === "spawn");
    expect(end).toMatchObject({ isError: true });
    agent.dispose();
  });

  it("a child over its time budget is stopped, also in the middle of a command", async () => {
    const { agent, ended } = await setup({ limits: { maxSeconds: 1 } });
    let parentSaw = "";
    faux.setResponses([
      spawnCall({ task: "Wait", tools: ["bash"], timeoutSeconds: 30 }),
      fauxAssistantMessage([fauxText("Starting the long job."), fauxToolCall("bash", { label: "Wait", command: "sleep 20" }, { id: "b1" })], { stopReason: "toolUse" }),
      (ctx) => {
        parentSaw = lastText(ctx);
        return fauxAssistantMessage([fauxText(isChild(ctx) ? "the child went on" : "Too slow.")]);
      },
    ]);
    const t0 = Date.now();
    const { outcome } = await run(agent);
    expect(outcome.finalText).toBe("Too slow.");
    // Capped at spawn.maxSeconds: 30 s asked, 1 s given.
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(parentSaw).toContain("Sub-agent stopped: ran out of its time budget of 1 s.\\nWhat it had so far:\\nStarting the long job.");
    expect(ended).toContain("sp1.b1");
    agent.dispose();
  });

  it("stopping the parent run stops the child and its command", async () => {
    const { agent, ended, calls } = await setup();
    let childAskedAgain = false;
    faux.setResponses([
      spawnCall({ task: "Wait", tools: ["bash"] }),
      fauxAssistantMessage([fauxToolCall("bash", { label: "Wait", command: "sleep 20" }, { id: "b1" })], { stopReason: "toolUse" }),
      (ctx) => {
        // Only the parent's loop may still ask (faux answers even a stopped run's call): the child asks nothing more.
        childAskedAgain ||= isChild(ctx);
        return fauxAssistantMessage([fauxText("never")]);
      },
    ]);
    const t0 = Date.now();
    const running = run(agent);
    while (!calls.some((c) => c.toolCallId === "sp1.b1") && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300)); // sleep is running
    await agent.abort();
    const { outcome } = await running;
    expect(outcome.stopReason).toBe("aborted");
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(ended).toEqual(expect.arrayContaining(["sp1.b1", "sp1"]));
    expect(childAskedAgain).toBe(false);
    faux.setResponses([]);
    agent.dispose();
  });

  it("a run starts at most spawn.maxPerRun sub-agents", async () => {
    const { agent } = await setup({ limits: { maxPerRun: 1 } });
    let second = "";
    faux.setResponses([
      spawnCall({ task: "one", tools: ["read"] }, "sp1"),
      fauxAssistantMessage([fauxText("first done")]),
      spawnCall({ task: "two", tools: ["read"] }, "sp2"),
      (ctx) => {
        second = lastText(ctx);
        return fauxAssistantMessage([fauxText("ok")]);
      },
    ]);
    await run(agent);
    expect(second).toContain("this run has started its 1 sub-agents (spawn.maxPerRun)");
    // The next run may start one again.
    faux.setResponses([spawnCall({ task: "three", tools: ["read"] }, "sp3"), fauxAssistantMessage([fauxText("third done")]), fauxAssistantMessage([fauxText("ok")])]);
    const again = await run(agent);
    expect(again.events).toContainEqual(expect.objectContaining({ type: "tool_execution_end", toolName: "spawn", isError: false }));
    agent.dispose();
  });
});
