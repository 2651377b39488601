import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Api, type Model, streamSimple } from "@mariozechner/pi-ai";
import { AuthStorage, ModelRegistry } from "@mariozechner/pi-coding-agent";
import { type FakeLlm, startFakeLlm } from "@mom/testing";
import { type CredentialPick, estimateCall, guardedStreamFn, type ModelAccess, withPickedCredential } from "./model-access.js";

let llm: FakeLlm;
let model: Model<Api>;
beforeAll(async () => {
  llm = await startFakeLlm();
  model = {
    id: "fake-model",
    name: "Fake",
    api: "openai-completions",
    provider: "fake",
    baseUrl: llm.baseUrl,
    reasoning: false,
    input: ["text"],
    cost: { input: 10, output: 30, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 128000,
    maxTokens: 16384,
  } as Model<Api>;
});
afterAll(() => llm.close());

/** A ModelAccess that hands out picks from a list and records what it was told. */
function scriptedAccess(picks: CredentialPick[]) {
  const told: string[] = [];
  const access: ModelAccess = {
    hasCredentials: (provider) => provider === "fake",
    admit: async () => undefined,
    pick: async () => picks.shift() ?? { unavailable: "none left" },
    refused: async (id, r) => (told.push(`refused ${id} ${r.status} ${r.retryAfterMs}`), true),
    settled: async (id, m) => void told.push(`settled ${id} ${m.stopReason}`),
  };
  return { access, told };
}
const ctx = { systemPrompt: "s".repeat(400), messages: [{ role: "user" as const, content: "hello", timestamp: 0 }] };

describe("guardedStreamFn", () => {
  it("estimates a call from the context and the model's prices", () => {
    const e = estimateCall(model, ctx);
    expect(e.outputTokens).toBe(1024);
    expect(e.inputTokens).toBeGreaterThanOrEqual(100);
    expect(e.usd).toBeCloseTo((e.inputTokens * 10 + 1024 * 30) / 1e6, 10);
  });

  it("reads status and retry-after of a refused call, then goes on with the next credential", async () => {
    llm.reset();
    llm.byKey("k1", { error: { status: 429, message: "slow down", retryAfterSeconds: 7 } });
    const { access, told } = scriptedAccess([{ id: "one", apiKey: "k1" }, { id: "two", apiKey: "k2" }]);
    const stops: string[] = [];
    const fn = guardedStreamFn(streamSimple, access, ModelRegistry.inMemory(AuthStorage.inMemory()), (r) => stops.push(r));
    const result = await (await fn(model, ctx, {})).result();
    expect(result.stopReason).toBe("stop");
    expect(told).toEqual(["refused one 429 7000", "settled two stop"]);
    expect(stops).toEqual([]);
  });

  it("makes no call for a run already stopped (pi asks again after a stopped tool call): aborted, nothing admitted or spent", async () => {
    llm.reset();
    const { access, told } = scriptedAccess([{ id: "one", apiKey: "k1" }]);
    let admitted = 0;
    access.admit = async () => void admitted++;
    const stops: string[] = [];
    const fn = guardedStreamFn(streamSimple, access, ModelRegistry.inMemory(AuthStorage.inMemory()), (r) => stops.push(r));
    const result = await (await fn(model, ctx, { signal: AbortSignal.abort() })).result();
    expect(result.stopReason).toBe("aborted");
    expect([llm.requests.length, admitted, told.length, stops.length]).toEqual([0, 0, 0, 0]);
  });

  it("records an answer stopped mid-stream at its estimate (the provider never reports its usage), one that finished at the provider's usage", async () => {
    llm.reset();
    llm.enqueue({ text: "word ".repeat(200), chunkDelayMs: 20 }, { text: "done", usage: { input: 7, output: 3 } });
    const settled: Array<{ stopReason: string; usage: { input: number; output: number; cost: { total: number } }; estimated?: boolean }> = [];
    const access: ModelAccess = { ...scriptedAccess([{ id: "one", apiKey: "k1" }, { id: "one", apiKey: "k1" }]).access, settled: async (_id, m, _model, estimated) => void settled.push({ ...m, estimated }) };
    const fn = guardedStreamFn(streamSimple, access, ModelRegistry.inMemory(AuthStorage.inMemory()), () => {});
    const stop = new AbortController();
    const stream = await fn(model, ctx, { signal: stop.signal });
    for await (const e of stream) if (e.type === "text_delta" && e.partial.content.some((c) => c.type === "text" && c.text.length > 40)) stop.abort();
    expect((await stream.result()).stopReason).toBe("aborted");
    const e = estimateCall(model, ctx);
    expect(settled[0]).toMatchObject({ stopReason: "aborted", estimated: true, usage: { input: e.inputTokens } });
    // What had streamed: more than nothing, less than the whole 1,000-character answer.
    expect(settled[0]!.usage.output).toBeGreaterThan(5);
    expect(settled[0]!.usage.output).toBeLessThan(250);
    expect(settled[0]!.usage.cost.total).toBeCloseTo((e.inputTokens * 10 + settled[0]!.usage.output * 30) / 1e6, 10);

    expect((await (await fn(model, ctx, {})).result()).stopReason).toBe("stop");
    expect(settled[1]).toMatchObject({ stopReason: "stop", usage: { input: 7, output: 3 } });
    expect(settled[1]!.estimated).toBe(false);
  });

  it("waits for a credential back within 20 s, and stops with the reason when none is", async () => {
    llm.reset();
    const retryAt = Date.now() + 300;
    const { access } = scriptedAccess([{ unavailable: "cooling", retryAt }, { id: "two", apiKey: "k2" }]);
    const fn = guardedStreamFn(streamSimple, access, ModelRegistry.inMemory(AuthStorage.inMemory()), () => {});
    expect((await (await fn(model, ctx, {})).result()).stopReason).toBe("stop");
    // Not before the credential was back (measured from retryAt: a busy machine may take most of the
    // 300 ms to build the registry above, as CI once did).
    expect(llm.requests[0]!.receivedAt).toBeGreaterThanOrEqual(retryAt - 20);

    const stops: string[] = [];
    const later = scriptedAccess([{ unavailable: "every fake credential is cooling down", retryAt: Date.now() + 600_000 }]);
    const stopped = await (await guardedStreamFn(streamSimple, later.access, ModelRegistry.inMemory(AuthStorage.inMemory()), (r) => stops.push(r))(model, ctx, {})).result();
    expect(stopped).toMatchObject({ stopReason: "error", errorMessage: "stopped by mom before calling the model" });
    expect(stops).toEqual(["every fake credential is cooling down"]);
    expect(llm.requests).toHaveLength(1);
  });
});

describe("withPickedCredential", () => {
  it("answers pi's own lookups (compaction) with the channel's pick, else with the registry's", async () => {
    const storage = AuthStorage.inMemory();
    storage.setRuntimeApiKey("fake", "from-pi");
    const registry = ModelRegistry.inMemory(storage);
    const picked = withPickedCredential(registry, scriptedAccess([{ id: "work", apiKey: "from-profile" }, { id: "env" }]).access);
    expect(await picked.getApiKeyAndHeaders(model)).toMatchObject({ ok: true, apiKey: "from-profile" });
    expect(await picked.getApiKeyAndHeaders(model)).toMatchObject({ ok: true, apiKey: "from-pi" });
    expect(picked.getAll()).toEqual(registry.getAll());
    expect(picked.hasConfiguredAuth(model)).toBe(true);
    expect(picked.hasConfiguredAuth({ ...model, provider: "other" })).toBe(false);
  });
});
