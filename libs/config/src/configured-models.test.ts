import { describe, expect, it } from "@jest/globals";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configuredModels } from "./configured-models.js";
import type { LoadedConfig } from "./load-config.js";

const loaded = (modelsFile: string) =>
  ({ config: { model: "anthropic/claude-x", channels: { "cli/local": { model: "fake/a" }, "slack/C1": {} } }, paths: { modelsFile } }) as unknown as LoadedConfig;

describe("configuredModels", () => {
  it("config.json's model and its channels', then every model models.json defines; a missing or broken models.json adds none", () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-models-"));
    writeFileSync(join(dir, "models.json"), JSON.stringify({ providers: { fake: { models: [{ id: "a" }, { id: "b" }, { name: "no id" }] } } }));
    expect(configuredModels(loaded(join(dir, "models.json")))).toEqual(["anthropic/claude-x", "fake/a", "fake/b"]);
    expect(configuredModels(loaded(join(dir, "absent.json")))).toEqual(["anthropic/claude-x", "fake/a"]);
    writeFileSync(join(dir, "broken.json"), "{");
    expect(configuredModels(loaded(join(dir, "broken.json")))).toEqual(["anthropic/claude-x", "fake/a"]);
  });
});
