import type { Api, Model } from "@mariozechner/pi-ai";
import { AuthStorage, ModelRegistry } from "@mariozechner/pi-coding-agent";
import { existsSync } from "node:fs";

export interface ModelPaths {
  modelsFile: string;
  authFile: string;
}

export interface ResolvedModel {
  model: Model<Api>;
  authStorage: AuthStorage;
  modelRegistry: ModelRegistry;
}

/** Startup problems the operator must fix; the message says what to do. */
export class ModelSetupError extends Error {
  override name = "ModelSetupError";
}

function credentialHint(provider: string, paths: ModelPaths): string {
  const env =
    provider === "anthropic"
      ? "ANTHROPIC_OAUTH_TOKEN or ANTHROPIC_API_KEY"
      : `the provider's API key variable (e.g. ${provider.toUpperCase().replace(/-/g, "_")}_API_KEY)`;
  return `set ${env} in the environment, add a credential for "${provider}" to ${paths.authFile}, or define the provider with an apiKey in ${paths.modelsFile}`;
}

/**
 * Finds `<provider>/<modelId>` among pi-ai's built-in models and data/models.json, and checks that
 * credentials exist, so a missing key is a clear startup message and not an error at the first chat.
 */
export function resolveModel(provider: string, modelId: string, paths: ModelPaths): ResolvedModel {
  const authStorage = AuthStorage.create(paths.authFile);
  const modelRegistry = ModelRegistry.create(authStorage, paths.modelsFile);
  const loadError = modelRegistry.getError();
  if (loadError) throw new ModelSetupError(`${paths.modelsFile}: ${loadError}`);
  const model = modelRegistry.find(provider, modelId);
  if (!model) {
    const known = [...new Set(modelRegistry.getAll().filter((m) => m.provider === provider).map((m) => m.id))];
    const hint = known.length
      ? `known ${provider} models: ${known.slice(0, 12).join(", ")}${known.length > 12 ? ", …" : ""}`
      : `no provider "${provider}" is built in${existsSync(paths.modelsFile) ? ` or defined in ${paths.modelsFile}` : `; custom endpoints go in ${paths.modelsFile}`}`;
    throw new ModelSetupError(`unknown model "${provider}/${modelId}": ${hint}`);
  }
  if (!modelRegistry.hasConfiguredAuth(model)) {
    throw new ModelSetupError(`no credentials for model "${provider}/${modelId}": ${credentialHint(provider, paths)}`);
  }
  return { model, authStorage, modelRegistry };
}
