import { describe, expect, it } from "@jest/globals";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ModelSetupError, resolveModel } from "./model.js";

describe("resolveModel", () => {
  it("says in one line that a custom provider needs an apiKey (any value for Ollama), naming the field and the file", () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-model-"));
    try {
      const modelsFile = join(dir, "models.json");
      writeFileSync(modelsFile, JSON.stringify({ providers: { ollama: { baseUrl: "http://localhost:11434/v1", api: "openai-completions", models: [{ id: "llama3.1:8b" }] } } }));
      const paths = { modelsFile, authFile: join(dir, "auth.json"), authProfilesFile: join(dir, "auth-profiles.json") };
      let err: Error | undefined;
      try {
        resolveModel("ollama", "llama3.1:8b", paths);
      } catch (e) {
        err = e as Error;
      }
      expect(err).toBeInstanceOf(ModelSetupError);
      expect(err!.message).toBe(
        `${modelsFile}: providers.ollama.apiKey: required when the provider defines models (the key, or the name of the environment variable holding it; a server that takes none, such as Ollama, accepts any value: "apiKey": "ollama")`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
