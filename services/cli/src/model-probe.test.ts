import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startFakeLlm, type FakeLlm } from "@mom/testing";
import { loadConfig } from "@mom/config";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startupModelCheck } from "./model-probe.js";

// The check `mom up` and `mom runner` make as they start: no completion, one clear line.
describe("the model check at start", () => {
  let llm: FakeLlm;
  let dir: string;
  beforeAll(async () => {
    llm = await startFakeLlm();
    dir = mkdtempSync(join(tmpdir(), "mom-probe-"));
  });
  afterAll(async () => {
    await llm.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function dataDir(name: string, models: object, model = "fake/fake-model"): string {
    const d = join(dir, name);
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, "models.json"), JSON.stringify(models));
    writeFileSync(join(d, "config.json"), JSON.stringify({ model }));
    return d;
  }

  it("is silent when the endpoint answers, and spends nothing", async () => {
    expect(await startupModelCheck(loadConfig(dataDir("good", llm.modelsJson())))).toBeUndefined();
    expect(llm.requests).toHaveLength(0);
  });

  it("names the endpoint when nothing listens there (the fake LLM stopped)", async () => {
    const stopped = await startFakeLlm();
    const models = stopped.modelsJson();
    await stopped.close();
    const line = await startupModelCheck(loadConfig(dataDir("refused", models)));
    expect(line).toBe(
      `model fake/fake-model at ${stopped.baseUrl}: connection refused (ECONNREFUSED) — nothing listens there: start the server (for Ollama: \`ollama serve\`) or correct providers.fake.baseUrl in ${join(dir, "refused", "models.json")}`,
    );
  });

  it("says the key was refused (401)", async () => {
    llm.setModels({ error: { status: 401, message: "Incorrect API key provided" } });
    try {
      const line = await startupModelCheck(loadConfig(dataDir("denied", llm.modelsJson())));
      expect(line).toMatch(/^model fake\/fake-model at http:\/\/127\.0\.0\.1:\d+\/v1: credentials refused \(HTTP 401\) \(Incorrect API key provided\) — check the key: providers\.fake\.apiKey in /);
    } finally {
      llm.setModels(["fake-model"]);
    }
  });

  it("says the server does not serve the model (404), listing what it does", async () => {
    const line = await startupModelCheck(loadConfig(dataDir("nomodel", llm.modelsJson({ modelId: "llama3" }), "fake/llama3")));
    expect(line).toMatch(/^model fake\/llama3 at http:\/\/127\.0\.0\.1:\d+\/v1: model not found \(the server lists: fake-model\) — the server does not serve "llama3": .*`ollama pull llama3`/);
  });

  it("tells a DNS failure from a refused connection", async () => {
    const models = llm.modelsJson() as { providers: Record<string, { baseUrl: string }> };
    models.providers.fake!.baseUrl = "http://no-such-host.invalid/v1";
    const line = await startupModelCheck(loadConfig(dataDir("dns", models)));
    expect(line).toMatch(/^model fake\/fake-model at http:\/\/no-such-host\.invalid\/v1: host name not found \(DNS\) \((ENOTFOUND|EAI_AGAIN)\) — check the host name/);
  });
});
