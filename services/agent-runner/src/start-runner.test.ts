import { describe, expect, it } from "@jest/globals";
import { ModelSetupError } from "@mom/agent";
import { ConfigError, createLogger, loadConfig } from "@mom/config";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startRunner } from "./start-runner.js";

const logger = createLogger("test", { level: "silent" });
const bus = { url: "nats://127.0.0.1:1", name: "never-connects" };

describe("startRunner", () => {

  it("refuses to start without model credentials, saying what to set", async () => {
    delete process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_OAUTH_TOKEN;
    const loaded = loadConfig(mkdtempSync(join(tmpdir(), "mom-creds-")), {});
    const err = await startRunner({ loaded, bus, logger }).catch((e) => e);
    expect(err).toBeInstanceOf(ModelSetupError);
    expect(err.message).toMatch(/no credentials for model "anthropic\/claude-sonnet-4-5": run `mom auth add anthropic --setup-token` \(a Claude subscription\) or `mom auth add anthropic --api-key` \(stored in .*auth-profiles\.json\), set ANTHROPIC_OAUTH_TOKEN or ANTHROPIC_API_KEY/);
  });

  it("counts an auth profile as credentials, and refuses an order naming an unknown profile", async () => {
    delete process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_OAUTH_TOKEN;
    const dir = mkdtempSync(join(tmpdir(), "mom-profiles-"));
    writeFileSync(join(dir, "auth-profiles.json"), JSON.stringify({ profiles: [{ id: "work", provider: "anthropic", type: "api_key", secret: "env:WORK_KEY" }] }));
    // Past the credential check, it fails only at connecting to NATS.
    const err = await startRunner({ loaded: loadConfig(dir, {}), bus, logger }).catch((e) => e);
    expect(err).not.toBeInstanceOf(ModelSetupError);
    expect(String(err.message)).toMatch(/127\.0\.0\.1:1|ECONNREFUSED|CONNECTION_REFUSED/);

    writeFileSync(join(dir, "config.json"), JSON.stringify({ auth: { order: { anthropic: ["wrok"] } } }));
    const bad = await startRunner({ loaded: loadConfig(dir, {}), bus, logger }).catch((e) => e);
    expect(bad).toBeInstanceOf(ConfigError);
    expect(bad.message).toBe(`${join(dir, "config.json")}: /auth/order/anthropic/0: no auth profile "wrok" (profiles: work)`);

    writeFileSync(join(dir, "auth-profiles.json"), JSON.stringify({ profiles: [{ id: "work", provider: "anthropic", type: "apikey", secret: "x" }] }));
    await expect(startRunner({ loaded: loadConfig(dir, {}), bus, logger })).rejects.toThrow(/auth-profiles\.json: \/profiles\/0\/type: expected "api_key", "token" \(e\.g\. from claude setup-token\) or "oauth"/);
  });

  it("names unknown models and where custom ones go", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-model-"));
    writeFileSync(join(dir, "config.json"), JSON.stringify({ model: "nowhere/model-x" }));
    const err = await startRunner({ loaded: loadConfig(dir, {}), bus, logger }).catch((e) => e);
    expect(err).toBeInstanceOf(ModelSetupError);
    expect(err.message).toContain('unknown model "nowhere/model-x"');
    expect(err.message).toContain("models.json");
  });
});

describe("ModelCatalog", () => {
  it("gives each channel its own model and thinking level over the global ones", async () => {
    const { ModelCatalog } = await import("./model-catalog.js");
    const dir = mkdtempSync(join(tmpdir(), "mom-catalog-"));
    writeFileSync(
      join(dir, "models.json"),
      JSON.stringify({ providers: { fake: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completions", apiKey: "k", models: [{ id: "a", reasoning: true }, { id: "b" }] } } }),
    );
    writeFileSync(join(dir, "config.json"), JSON.stringify({ model: "fake/a", thinkingLevel: "low", channels: { "cli/x": { model: "fake/b" }, "cli/y": { thinkingLevel: "high" } } }));
    const catalog = new ModelCatalog(loadConfig(dir, {}));
    expect(catalog.forChannel("cli/x")).toMatchObject({ resolved: { model: { id: "b" } }, thinkingLevel: "low" });
    expect(catalog.forChannel("cli/y")).toMatchObject({ resolved: { model: { id: "a" } }, thinkingLevel: "high" });
    expect(catalog.forChannel("cli/other")).toMatchObject({ resolved: { model: { id: "a" } }, thinkingLevel: "low" });
  });

  it("refuses to start when models.json names an api pi-ai does not have, naming the file and the field", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-api-"));
    writeFileSync(
      join(dir, "models.json"),
      JSON.stringify({ providers: { local: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-completion", apiKey: "k", models: [{ id: "m" }] } } }),
    );
    writeFileSync(join(dir, "config.json"), JSON.stringify({ model: "local/m" }));
    const err = await startRunner({ loaded: loadConfig(dir, {}), bus, logger }).catch((e) => e);
    expect(err).toBeInstanceOf(ModelSetupError);
    expect(err.message).toMatch(new RegExp(`^${join(dir, "models.json")}: providers\\.local \\(model "m"\\): unknown "api": "openai-completion"; known apis: .*openai-completions`));
  });

  it("refuses to start when a channel names an unknown model", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-catalog-"));
    writeFileSync(join(dir, "config.json"), JSON.stringify({ model: "anthropic/claude-sonnet-4-5", channels: { "cli/x": { model: "nowhere/x" } } }));
    process.env.ANTHROPIC_API_KEY = "test-key";
    const err = await startRunner({ loaded: loadConfig(dir, {}), bus, logger }).catch((e) => e);
    delete process.env.ANTHROPIC_API_KEY;
    expect(err).toBeInstanceOf(ModelSetupError);
    expect(err.message).toContain('unknown model "nowhere/x"');
  });
});
