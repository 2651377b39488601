import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider, type FauxProviderRegistration } from "@mariozechner/pi-ai";
import { AuthStorage, ModelRegistry } from "@mariozechner/pi-coding-agent";
import type { LogEntry, OutboundEventBody } from "@mom/contracts";
import { Sandbox } from "@mom/sandbox";
import { type ChannelStore, WorkspaceLayout } from "@mom/store";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChannelAgent } from "./channel-agent.js";

const runnerFiles = (s: ChannelStore) => [s.logFile, s.contextFile, s.receiptsFile];

const entry = (id: string, text: string, userName = "mario"): LogEntry => ({
  id,
  date: new Date().toISOString(),
  user: `U-${userName}`,
  userName,
  text,
  attachments: [],
  isBot: false,
  isMention: true,
});

describe("ChannelAgent", () => {
  let dir: string;
  let faux: FauxProviderRegistration;
  /** A model whose window a few big log lines fill, so compaction really runs. */
  let small: FauxProviderRegistration;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "mom-agent-"));
    faux = registerFauxProvider({ provider: "faux-agent", models: [{ id: "m1", contextWindow: 100_000 }] });
    small = registerFauxProvider({ provider: "faux-agent", models: [{ id: "m-small", contextWindow: 100_000 }] });
  });
  afterAll(() => {
    faux.unregister();
    small.unregister();
    rmSync(dir, { recursive: true, force: true });
  });

  async function setup(model = faux) {
    const layout = new WorkspaceLayout(join(dir, "workspace"));
    await layout.ensureWorkspace();
    const store = layout.channel({ adapter: "cli", channelId: `c${Math.random().toString(36).slice(2)}` });
    const sandbox = new Sandbox({ type: "bwrap" }, { dataDir: dir, workspaceDir: layout.workspaceDir }).forChannel(store.dir, runnerFiles(store));
    const authStorage = AuthStorage.inMemory();
    authStorage.setRuntimeApiKey("faux-agent", "k");
    const agent = await ChannelAgent.create({
      qualifiedChannelId: "cli/test",
      workspaceDir: layout.workspaceDir,
      store,
      sandbox,
      resolved: { model: model.getModel() as never, authStorage, modelRegistry: ModelRegistry.inMemory(authStorage) },
      agentDir: join(dir, "pi"),
    });
    return { layout, store, agent };
  }

  it("runs bash, answers, persists context.jsonl and syncs unmentioned log lines", async () => {
    const { store, agent, layout } = await setup();
    writeFileSync(join(layout.workspaceDir, "MEMORY.md"), "The team ships on Fridays.");
    await store.appendLog({ ...entry("m0", "anyone seen the build?", "luigi"), isMention: false });
    await store.appendLog(entry("m1", "@mom list files"));
    let systemPrompt = "";
    let secondRequest: string[] = [];
    faux.setResponses([
      (ctx) => {
        systemPrompt = ctx.systemPrompt ?? "";
        return fauxAssistantMessage([fauxToolCall("bash", { label: "Say hi", command: "echo hi-from-bash" })], { stopReason: "toolUse" });
      },
      (ctx) => {
        secondRequest = ctx.messages.map((m) => JSON.stringify(m.content));
        return fauxAssistantMessage([fauxText("All done.")]);
      },
    ]);
    const events: OutboundEventBody[] = [];
    const outcome = await agent.run({ ...entry("m1", "@mom list files") }, (e) => events.push(e));

    expect(outcome).toMatchObject({ stopReason: "stop", finalText: "All done." });
    expect(systemPrompt).toContain("The team ships on Fridays.");
    expect(systemPrompt).toContain("@luigi");
    const start = events.find((e) => e.type === "tool_execution_start");
    const end = events.find((e) => e.type === "tool_execution_end");
    expect(start).toMatchObject({ toolName: "bash", label: "Say hi" });
    expect(end).toMatchObject({ toolName: "bash", label: "Say hi", isError: false });
    expect((end as { resultText: string }).resultText).toContain("hi-from-bash");
    // luigi's unmentioned message reached the model before the trigger
    expect(secondRequest.join("\n")).toContain("anyone seen the build?");
    const context = readFileSync(store.contextFile, "utf8");
    expect(context).toContain("All done.");
    expect(context).toContain("anyone seen the build?");
    agent.dispose();
  });

  it("keeps the answer of a run whose end compacts the context (compaction shortens the session's messages)", async () => {
    const { store, agent } = await setup(small);
    // Each line is ~5k tokens to the faux model (4 characters a token): five of them stay under the
    // threshold (window 100k - 16k reserve; faux counts a prompt twice, as input and cache write), four more cross it.
    const big = (i: number) => `output ${i}: ${"x".repeat(20_000)}`;
    for (let i = 0; i < 5; i++) await store.appendLog({ ...entry(`b${i}`, big(i), "luigi"), isMention: false });
    await store.appendLog(entry("q1", "@mom first question"));
    small.setResponses([fauxAssistantMessage([fauxText("First answer.")])]);
    const firstEvents: OutboundEventBody[] = [];
    const first = await agent.run(entry("q1", "@mom first question"), (e) => firstEvents.push(e));
    expect(firstEvents.some((e) => e.type === "compaction_start")).toBe(false);
    expect(first).toMatchObject({ stopReason: "stop", finalText: "First answer." });

    for (let i = 5; i < 9; i++) await store.appendLog({ ...entry(`b${i}`, big(i), "luigi"), isMention: false });
    await store.appendLog(entry("q2", "@mom second question"));
    const summary = () => fauxAssistantMessage([fauxText("Summary: luigi pasted long outputs.")]);
    small.setResponses([fauxAssistantMessage([fauxText("Second answer.")]), summary, summary]);
    const events: OutboundEventBody[] = [];
    const second = await agent.run(entry("q2", "@mom second question"), (e) => events.push(e));

    expect(events.find((e) => e.type === "compaction_start")).toMatchObject({ reason: "threshold" });
    expect(events.find((e) => e.type === "compaction_end")).toMatchObject({ aborted: false });
    expect(readFileSync(store.contextFile, "utf8")).toContain("Summary: luigi pasted long outputs.");
    expect(second).toMatchObject({ stopReason: "stop", finalText: "Second answer." });
    expect(second.usage.output).toBeGreaterThan(0);
    agent.dispose();
  });

  it("ends with stopReason error and a message when the provider fails", async () => {
    const { store, agent } = await setup();
    await store.appendLog(entry("e1", "hello"));
    faux.setResponses([fauxAssistantMessage([], { stopReason: "error", errorMessage: "provider exploded" })]);
    const outcome = await agent.run(entry("e1", "hello"), () => {});
    expect(outcome.stopReason).toBe("error");
    expect(outcome.errorMessage).toContain("provider exploded");
    agent.dispose();
  });

  it("runs every tool in the channel's sandbox: no secrets, no other channel, no tool code, and says so in the prompt", async () => {
    const other = await setup();
    await other.store.appendLog(entry("o1", "the other channel's secret plan"));
    writeFileSync(join(other.store.dir, "MEMORY.md"), "other channel memory");
    other.agent.dispose();
    const { store, agent, layout } = await setup();
    mkdirSync(join(layout.workspaceDir, "tools", "t"), { recursive: true });
    writeFileSync(join(layout.workspaceDir, "tools", "t", "index.mjs"), "export default {};\n");
    symlinkSync(join(other.store.dir, "MEMORY.md"), join(store.dir, "MEMORY.md"));
    process.env.MOM_AGENT_TEST_SECRET = "agent-test-secret-77";
    await store.appendLog(entry("s1", "@mom try things"));
    const otherLog = join("..", other.store.ref.channelId, "log.jsonl");
    let systemPrompt = "";
    faux.setResponses([
      (ctx) => {
        systemPrompt = ctx.systemPrompt ?? "";
        return fauxAssistantMessage(
          [
            fauxToolCall("bash", { label: "Look around", command: `env; ls ..; cat ${otherLog}; echo x > ${join(layout.workspaceDir, "tools/t/index.mjs")}; rm log.jsonl; echo end` }),
            fauxToolCall("read", { label: "Read theirs", path: otherLog }),
            fauxToolCall("write", { label: "Plant a tool", path: "../../../tools/t/index.mjs", content: "evil" }),
            fauxToolCall("write", { label: "Write mine", path: "scratch/ok.txt", content: "fine" }),
          ],
          { stopReason: "toolUse" },
        );
      },
      fauxAssistantMessage([fauxText("Done.")]),
    ]);
    const events: OutboundEventBody[] = [];
    try {
      await agent.run(entry("s1", "@mom try things"), (e) => events.push(e));
    } finally {
      delete process.env.MOM_AGENT_TEST_SECRET;
    }
    const ends = events.filter((e): e is Extract<OutboundEventBody, { type: "tool_execution_end" }> => e.type === "tool_execution_end");
    // pi runs the calls at once; they end in any order.
    const [bash, read, plant, mine] = ["Look around", "Read theirs", "Plant a tool", "Write mine"].map((label) => ends.find((e) => e.label === label));
    expect(systemPrompt).toContain("Sandbox: bubblewrap");
    expect(systemPrompt).not.toContain("other channel memory");
    expect(bash!.resultText).not.toContain("agent-test-secret-77");
    expect(bash!.resultText).not.toContain("secret plan");
    expect(bash!.resultText).toMatch(/^[^\n]*PATH=|\nPATH=/);
    expect(bash!.resultText).toContain("Read-only file system");
    expect(bash!.resultText).toMatch(/rm: cannot remove 'log.jsonl': (Device or resource busy|Read-only file system)/);
    expect(read).toMatchObject({ isError: true, resultText: expect.stringContaining("not visible to this channel") });
    expect(plant).toMatchObject({ isError: true, resultText: expect.stringContaining("read-only for this channel") });
    expect(mine).toMatchObject({ isError: false });
    expect(readFileSync(join(layout.workspaceDir, "tools", "t", "index.mjs"), "utf8")).toBe("export default {};\n");
    expect(readFileSync(store.logFile, "utf8")).toContain("try things");
    agent.dispose();
  });
});
