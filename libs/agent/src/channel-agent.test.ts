import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider, type FauxProviderRegistration } from "@mariozechner/pi-ai";
import { AuthStorage, ModelRegistry } from "@mariozechner/pi-coding-agent";
import type { LogEntry, OutboundEventBody } from "@mom/contracts";
import { WorkspaceLayout } from "@mom/store";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ChannelAgent } from "./channel-agent.js";

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
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "mom-agent-"));
    faux = registerFauxProvider({ provider: "faux-agent", models: [{ id: "m1", contextWindow: 100_000 }] });
  });
  afterAll(() => {
    faux.unregister();
    rmSync(dir, { recursive: true, force: true });
  });

  async function setup() {
    const layout = new WorkspaceLayout(join(dir, "workspace"));
    await layout.ensureWorkspace();
    const store = layout.channel({ adapter: "cli", channelId: `c${Math.random().toString(36).slice(2)}` });
    const authStorage = AuthStorage.inMemory();
    authStorage.setRuntimeApiKey("faux-agent", "k");
    const agent = await ChannelAgent.create({
      qualifiedChannelId: "cli/test",
      workspaceDir: layout.workspaceDir,
      store,
      resolved: { model: faux.getModel() as never, authStorage, modelRegistry: ModelRegistry.inMemory(authStorage) },
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

  it("ends with stopReason error and a message when the provider fails", async () => {
    const { store, agent } = await setup();
    await store.appendLog(entry("e1", "hello"));
    faux.setResponses([fauxAssistantMessage([], { stopReason: "error", errorMessage: "provider exploded" })]);
    const outcome = await agent.run(entry("e1", "hello"), () => {});
    expect(outcome.stopReason).toBe("error");
    expect(outcome.errorMessage).toContain("provider exploded");
    agent.dispose();
  });
});
