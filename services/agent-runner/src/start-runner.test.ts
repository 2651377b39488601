import { describe, expect, it } from "@jest/globals";
import { ModelSetupError } from "@mom/agent";
import { createLogger, loadConfig } from "@mom/config";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startRunner } from "./start-runner.js";

describe("startRunner", () => {
  const logger = createLogger("test", { level: "silent" });
  const bus = { url: "nats://127.0.0.1:1", name: "never-connects" };

  it("refuses to start without model credentials, saying what to set", async () => {
    delete process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_OAUTH_TOKEN;
    const loaded = loadConfig(mkdtempSync(join(tmpdir(), "mom-creds-")), {});
    const err = await startRunner({ loaded, bus, logger }).catch((e) => e);
    expect(err).toBeInstanceOf(ModelSetupError);
    expect(err.message).toMatch(/no credentials for model "anthropic\/claude-sonnet-4-5": set ANTHROPIC_OAUTH_TOKEN or ANTHROPIC_API_KEY/);
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
