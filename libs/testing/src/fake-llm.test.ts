import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { complete, stream, Type, type Context, type Model } from "@mariozechner/pi-ai";
import { connectFakeLlm, spawnFakeLlm, startFakeLlm, type FakeLlm } from "./fake-llm.js";

function piModel(baseUrl: string): Model<"openai-completions"> {
  return {
    id: "fake-model",
    name: "Fake",
    api: "openai-completions",
    provider: "fake",
    baseUrl,
    reasoning: false,
    input: ["text"],
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 128000,
    maxTokens: 16384,
  };
}

const userCtx = (text: string, extra: Partial<Context> = {}): Context => ({
  systemPrompt: "You are a test.",
  messages: [{ role: "user", content: text, timestamp: Date.now() }],
  ...extra,
});

describe("fake LLM at the pi-ai level", () => {
  let llm: FakeLlm;
  let model: Model<"openai-completions">;
  beforeAll(async () => {
    llm = await startFakeLlm();
    model = piModel(llm.baseUrl);
  });
  afterEach(() => llm.reset());
  afterAll(() => llm.close());

  it("streams text in several deltas and records the request", async () => {
    llm.enqueue({ text: "Hello from the fake model" });
    const s = stream(model, userCtx("hi"), { apiKey: "fake-key" });
    const deltas: string[] = [];
    for await (const ev of s) if (ev.type === "text_delta") deltas.push(ev.delta);
    const msg = await s.result();
    expect(msg.stopReason).toBe("stop");
    expect(msg.content).toEqual([{ type: "text", text: "Hello from the fake model" }]);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join("")).toBe("Hello from the fake model");

    expect(llm.requests).toHaveLength(1);
    const req = llm.requests[0]!;
    expect(req.path).toBe("/v1/chat/completions");
    expect(req.model).toBe("fake-model");
    expect(req.body.stream).toBe(true);
    expect(req.body.stream_options).toEqual({ include_usage: true });
    expect(req.headers.authorization).toBe("Bearer fake-key");
    expect(req.messages[0]).toEqual({ role: "system", content: "You are a test." });
    expect(req.messages[1]).toEqual({ role: "user", content: "hi" });
  });

  it("falls back to text 'ok' when the queue is empty, and setFallback replaces it", async () => {
    expect((await complete(model, userCtx("x"), { apiKey: "k" })).content).toEqual([{ type: "text", text: "ok" }]);
    llm.setFallback((req) => ({ text: `echo: ${req.messages.at(-1).content}` }));
    expect((await complete(model, userCtx("ping"), { apiKey: "k" })).content).toEqual([{ type: "text", text: "echo: ping" }]);
  });

  it("streams a tool call whose arguments arrive in pieces", async () => {
    llm.enqueue({
      text: "Let me check.",
      toolCalls: [{ name: "lookup", arguments: { city: "Paris", days: 3, nested: { ok: true } } }],
    });
    const tools = [{ name: "lookup", description: "Look up weather", parameters: Type.Object({ city: Type.String(), days: Type.Number() }) }];
    const s = stream(model, userCtx("weather?", { tools }), { apiKey: "k" });
    let argDeltas = 0;
    for await (const ev of s) if (ev.type === "toolcall_delta" && ev.delta) argDeltas++;
    const msg = await s.result();
    expect(msg.stopReason).toBe("toolUse");
    expect(argDeltas).toBeGreaterThan(1);
    expect(msg.content[0]).toEqual({ type: "text", text: "Let me check." });
    expect(msg.content[1]).toEqual({ type: "toolCall", id: "call_1_0", name: "lookup", arguments: { city: "Paris", days: 3, nested: { ok: true } } });
    expect(llm.requests[0]!.tools?.[0]).toMatchObject({ type: "function", function: { name: "lookup", description: "Look up weather" } });
  });

  it("reports scripted usage, including cached tokens", async () => {
    llm.enqueue({ text: "counted", usage: { input: 120, output: 7, cacheRead: 30 } });
    const msg = await complete(model, userCtx("count"), { apiKey: "k" });
    expect(msg.usage).toMatchObject({ input: 120, output: 7, cacheRead: 30, cacheWrite: 0, totalTokens: 157 });
  });

  it("an HTTP error turn ends with stopReason error and the message, without SDK retries", async () => {
    llm.enqueue({ error: { status: 429, message: "Rate limit reached for fake-model", retryAfterSeconds: 1 } });
    const msg = await complete(model, userCtx("x"), { apiKey: "k" });
    expect(msg.stopReason).toBe("error");
    expect(msg.errorMessage).toBe("429 Rate limit reached for fake-model");
    expect(llm.requests).toHaveLength(1);

    llm.enqueue({ error: { status: 400, message: "bad request body" } });
    const msg2 = await complete(model, userCtx("x"), { apiKey: "k" });
    expect(msg2.errorMessage).toBe("400 bad request body");
  });

  it("with sdkRetry the OpenAI SDK retries a 500 and the next turn answers", async () => {
    llm.enqueue({ error: { status: 500, message: "boom", sdkRetry: true } }, { text: "recovered" });
    const msg = await complete(model, userCtx("x"), { apiKey: "k", maxRetries: 1 });
    expect(msg.content).toEqual([{ type: "text", text: "recovered" }]);
    expect(llm.requests).toHaveLength(2);
  });

  it("aborting a hang turn ends with stopReason aborted and frees the server", async () => {
    llm.enqueue({ hang: true });
    const ac = new AbortController();
    const p = complete(model, userCtx("wait"), { apiKey: "k", signal: ac.signal });
    await llm.waitForRequests(1);
    ac.abort();
    const msg = await p;
    expect(msg.stopReason).toBe("aborted");
    // The server still answers afterwards.
    expect((await complete(model, userCtx("again"), { apiKey: "k" })).content).toEqual([{ type: "text", text: "ok" }]);
  });

  it("a disconnect turn ends in an error after partial text", async () => {
    llm.enqueue({ disconnect: { afterText: "partial answer" } });
    const msg = await complete(model, userCtx("x"), { apiKey: "k" });
    expect(msg.stopReason).toBe("error");
    expect(msg.errorMessage).toBeTruthy();
  });

  it("delayMs and chunkDelayMs slow the answer down", async () => {
    llm.enqueue({ text: "a b c d", delayMs: 60, chunkDelayMs: 20 });
    const t0 = Date.now();
    const msg = await complete(model, userCtx("x"), { apiKey: "k" });
    expect(msg.content).toEqual([{ type: "text", text: "a b c d" }]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
  });

  it("waitForRequests times out with a clear message", async () => {
    await expect(llm.waitForRequests(1, 50)).rejects.toThrow("expected 1 request(s) within 50 ms, got 0");
  });

  it("answers non-streaming requests as chat.completion JSON", async () => {
    llm.enqueue({ text: "plain", toolCalls: [{ name: "t", arguments: { a: 1 }, id: "call_x" }], usage: { input: 5, output: 2 } });
    const r = await fetch(`${llm.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "fake-model", messages: [{ role: "user", content: "x" }] }),
    });
    const body = (await r.json()) as any;
    expect(body.object).toBe("chat.completion");
    expect(body.choices[0].finish_reason).toBe("tool_calls");
    expect(body.choices[0].message).toMatchObject({
      role: "assistant",
      content: "plain",
      tool_calls: [{ id: "call_x", type: "function", function: { name: "t", arguments: '{"a":1}' } }],
    });
    expect(body.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 });
  });

  it("answers per API key: 429 with and without retry-after, 401, 402 billing; other keys use the queue", async () => {
    llm.byKey("limited", { error: { status: 429, message: "Rate limit reached", retryAfterSeconds: 30 } });
    llm.byKey("busy", { error: { status: 429, message: "Too many requests" } });
    llm.byKey("revoked", { error: { status: 401, message: "Incorrect API key provided" } });
    llm.byKey("broke", { error: { status: 402, message: "Your credit balance is too low", type: "billing_error" } });
    llm.enqueue({ text: "fine" });
    expect((await complete(model, userCtx("x"), { apiKey: "limited" })).errorMessage).toBe("429 Rate limit reached");
    expect((await complete(model, userCtx("x"), { apiKey: "busy" })).errorMessage).toBe("429 Too many requests");
    expect((await complete(model, userCtx("x"), { apiKey: "revoked" })).errorMessage).toBe("401 Incorrect API key provided");
    expect((await complete(model, userCtx("x"), { apiKey: "broke" })).errorMessage).toBe("402 Your credit balance is too low");
    expect((await complete(model, userCtx("x"), { apiKey: "good" })).content).toEqual([{ type: "text", text: "fine" }]);
    const limited = await fetch(`${llm.baseUrl}/chat/completions`, { method: "POST", headers: { authorization: "Bearer limited" }, body: "{}" });
    expect([limited.status, limited.headers.get("retry-after")]).toEqual([429, "30"]);
    const busy = await fetch(`${llm.baseUrl}/chat/completions`, { method: "POST", headers: { authorization: "Bearer busy" }, body: "{}" });
    expect([busy.status, busy.headers.get("retry-after")]).toEqual([429, null]);
    await connectFakeLlm(llm.baseUrl).byKey("limited", undefined);
    expect((await complete(model, userCtx("x"), { apiKey: "limited" })).content).toEqual([{ type: "text", text: "ok" }]);
  });

  it("is scriptable through the control routes", async () => {
    const remote = connectFakeLlm(llm.baseUrl);
    await remote.enqueue({ text: "via control" });
    expect((await complete(model, userCtx("x"), { apiKey: "k" })).content).toEqual([{ type: "text", text: "via control" }]);
    const rs = await remote.waitForRequests(1);
    expect(rs[0]!.messages.at(-1)).toEqual({ role: "user", content: "x" });
  });
});

describe("fake LLM shutdown", () => {
  it("close() ends requests that are still open (hang, slow stream) and resolves", async () => {
    const llm = await startFakeLlm();
    llm.enqueue({ hang: true }, { text: "a b c d e f", chunkDelayMs: 10_000 });
    const post = () =>
      fetch(`${llm.baseUrl}/chat/completions`, {
        method: "POST",
        body: JSON.stringify({ model: "m", messages: [], stream: true }),
      }).then(
        async (r) => {
          await r.text();
          return `status ${r.status}`;
        },
      ).catch((e: Error) => `failed: ${e.message}`);
    const hung = post();
    const slow = post();
    await llm.waitForRequests(2);
    const t0 = Date.now();
    await llm.close();
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(await hung).toMatch(/^failed/);
    expect(await slow).toMatch(/^failed/);
  });
});

describe("fake LLM CLI in another process", () => {
  // `npm test` builds before Jest runs, so the CLI's dist file is always there.
  it("serves the scripted turns from a JSON file, then 'ok'", async () => {
    const child = await spawnFakeLlm({ turns: [{ text: "first" }, { error: { status: 503, message: "down" } }] });
    try {
      const model = piModel(child.baseUrl);
      expect((await complete(model, userCtx("1"), { apiKey: "k" })).content).toEqual([{ type: "text", text: "first" }]);
      expect((await complete(model, userCtx("2"), { apiKey: "k" })).errorMessage).toBe("503 down");
      expect((await complete(model, userCtx("3"), { apiKey: "k" })).content).toEqual([{ type: "text", text: "ok" }]);
      await child.enqueue({ text: "late" });
      expect((await complete(model, userCtx("4"), { apiKey: "k" })).content).toEqual([{ type: "text", text: "late" }]);
      expect((await child.requests()).map((r) => r.messages.at(-1).content)).toEqual(["1", "2", "3", "4"]);
    } finally {
      await child.stop();
    }
  });
});

describe("fake LLM behind a pi-coding-agent AgentSession", () => {
  let llm: FakeLlm;
  let tmp: string;
  const savedEnv = { agentDir: process.env.PI_CODING_AGENT_DIR, home: process.env.HOME };
  beforeAll(async () => {
    llm = await startFakeLlm();
    tmp = mkdtempSync(join(tmpdir(), "fake-llm-agent-"));
    // pi resolves ~/.pi/agent from PI_CODING_AGENT_DIR (some modules at import time) and looks at
    // $HOME/.agents; point both into the temp dir before pi-coding-agent is imported.
    mkdirSync(join(tmp, "agent"), { recursive: true });
    mkdirSync(join(tmp, "home"), { recursive: true });
    mkdirSync(join(tmp, "work"), { recursive: true });
    process.env.PI_CODING_AGENT_DIR = join(tmp, "agent");
    process.env.HOME = join(tmp, "home");
  });
  afterAll(async () => {
    await llm.close();
    rmSync(tmp, { recursive: true, force: true });
    if (savedEnv.agentDir === undefined) delete process.env.PI_CODING_AGENT_DIR;
    else process.env.PI_CODING_AGENT_DIR = savedEnv.agentDir;
    process.env.HOME = savedEnv.home;
  });

  it("runs the bash tool from a scripted tool call and ends with the scripted text", async () => {
    const pi = await import("@mariozechner/pi-coding-agent");
    const agentDir = join(tmp, "agent");
    const cwd = join(tmp, "work");
    const modelsPath = join(agentDir, "models.json");
    writeFileSync(modelsPath, JSON.stringify(llm.modelsJson(), null, 2));

    const authStorage = pi.AuthStorage.inMemory();
    const modelRegistry = pi.ModelRegistry.create(authStorage, modelsPath);
    expect(modelRegistry.getError()).toBeUndefined();
    const model = modelRegistry.find("fake", "fake-model");
    expect(model).toBeDefined();
    expect(model!.baseUrl).toBe(llm.baseUrl);
    const auth = await modelRegistry.getApiKeyAndHeaders(model!);
    expect(auth).toMatchObject({ ok: true, apiKey: "fake-key" });

    const settingsManager = pi.SettingsManager.inMemory({
      compaction: { enabled: false },
      retry: { enabled: false, provider: { maxRetries: 0 } },
    });
    const resourceLoader = new pi.DefaultResourceLoader({
      cwd,
      agentDir,
      settingsManager,
      noExtensions: true,
      noSkills: true,
      noPromptTemplates: true,
      noThemes: true,
      noContextFiles: true,
      systemPromptOverride: () => "You are a fake-tested agent.",
    });
    await resourceLoader.reload();
    const { session } = await pi.createAgentSession({
      cwd,
      agentDir,
      model: model!,
      thinkingLevel: "off",
      authStorage,
      modelRegistry,
      resourceLoader,
      sessionManager: pi.SessionManager.inMemory(cwd),
      settingsManager,
    });
    const events: any[] = [];
    const unsubscribe = session.subscribe((e) => events.push(e));

    llm.enqueue({ toolCalls: [{ name: "bash", arguments: { command: "echo hi" } }] }, { text: "done" });
    try {
      await session.prompt("run it");
    } finally {
      unsubscribe();
    }

    const toolEnd = events.find((e) => e.type === "tool_execution_end");
    expect(toolEnd).toBeDefined();
    expect(toolEnd.toolName).toBe("bash");
    expect(toolEnd.isError).toBe(false);
    expect(JSON.stringify(toolEnd.result.content)).toContain("hi");

    const last = session.messages.at(-1) as any;
    expect(last.role).toBe("assistant");
    expect(last.stopReason).toBe("stop");
    expect(last.content).toEqual([{ type: "text", text: "done" }]);
    expect(events.some((e) => e.type === "message_update" && e.assistantMessageEvent?.type === "text_delta")).toBe(true);

    expect(llm.requests).toHaveLength(2);
    const first = llm.requests[0]!;
    expect(first.messages[0]).toEqual({ role: "system", content: expect.stringContaining("You are a fake-tested agent.") });
    expect(first.messages.at(-1)).toMatchObject({ role: "user" });
    expect(first.tools?.map((t: any) => t.function.name).sort()).toEqual(["bash", "edit", "read", "write"]);
    const second = llm.requests[1]!;
    expect(second.messages).toContainEqual(
      expect.objectContaining({
        role: "assistant",
        tool_calls: [{ id: "call_1_0", type: "function", function: { name: "bash", arguments: '{"command":"echo hi"}' } }],
      }),
    );
    const toolMsg = second.messages.find((m: any) => m.role === "tool");
    expect(toolMsg).toMatchObject({ role: "tool", tool_call_id: "call_1_0" });
    expect(toolMsg.content).toContain("hi");

    session.dispose();
    // Nothing was written into the agent dir besides our models.json, nor into $HOME.
    expect(readdirSync(agentDir)).toEqual(["models.json"]);
    expect(readdirSync(join(tmp, "home"))).toEqual([]);
  });
});
