import { type Api, getApiProviders, type Model } from "@mariozechner/pi-ai";
import { AuthStorage, ModelRegistry } from "@mariozechner/pi-coding-agent";
import { existsSync } from "node:fs";

export interface ModelPaths {
  modelsFile: string;
  authFile: string;
  authProfilesFile: string;
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
  const add = provider === "anthropic" ? "`mom auth add anthropic --setup-token` (a Claude subscription) or `mom auth add anthropic --api-key`" : `\`mom auth add ${provider} --api-key\``;
  return `run ${add} (stored in ${paths.authProfilesFile}), set ${env} in the environment, or define the provider with an apiKey in ${paths.modelsFile}`;
}

/**
 * Finds `<provider>/<modelId>` among pi-ai's built-in models and data/models.json, and checks that
 * credentials exist (an auth profile for the provider, or one pi finds itself), so a missing key is a clear startup message and not an error at the first chat.
 */
export function resolveModel(provider: string, modelId: string, paths: ModelPaths, hasProfile: (provider: string) => boolean = () => false): ResolvedModel {
  const authStorage = AuthStorage.create(paths.authFile);
  const modelRegistry = ModelRegistry.create(authStorage, paths.modelsFile);
  const loadError = modelRegistry.getError();
  if (loadError) throw new ModelSetupError(`${paths.modelsFile}: ${loadError}`);
  // pi accepts any api name in models.json and fails only when the model is called: every message.
  const known = new Set(getApiProviders().map((p) => p.api));
  const bad = modelRegistry.getAll().find((m) => !known.has(m.api));
  if (bad) {
    throw new ModelSetupError(`${paths.modelsFile}: providers.${bad.provider} (model "${bad.id}"): unknown "api": "${bad.api}"; known apis: ${[...known].join(", ")}`);
  }
  const model = modelRegistry.find(provider, modelId);
  if (!model) {
    const known = [...new Set(modelRegistry.getAll().filter((m) => m.provider === provider).map((m) => m.id))];
    const hint = known.length
      ? `known ${provider} models: ${known.slice(0, 12).join(", ")}${known.length > 12 ? ", …" : ""}`
      : `no provider "${provider}" is built in${existsSync(paths.modelsFile) ? ` or defined in ${paths.modelsFile}` : `; custom endpoints go in ${paths.modelsFile}`}`;
    throw new ModelSetupError(`unknown model "${provider}/${modelId}": ${hint}`);
  }
  if (!hasProfile(provider) && !modelRegistry.hasConfiguredAuth(model)) {
    throw new ModelSetupError(`no credentials for model "${provider}/${modelId}": ${credentialHint(provider, paths)}`);
  }
  return { model, authStorage, modelRegistry };
}
