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
  /** The models.json it was resolved against (errors name it when the provider is defined there). */
  modelsFile?: string;
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
 * pi's models.json errors as one line naming the file and the field: "Failed to load
 * models.json: Provider ollama: "apiKey" is required …\n\nFile: …" becomes
 * `data/models.json: providers.ollama.apiKey: required …`.
 */
export function modelsFileError(modelsFile: string, piError: string): string {
  const text = piError.replace(/\n+File: .*$/s, "").replace(/^Failed to (load|parse) models\.json: /, "").replace(/^Invalid models\.json schema:\s*/, "schema: ").replace(/\s*\n\s*/g, "; ").trim();
  const field = /^Provider ([^:,]+): "(\w+)" is required when defining custom models\.?$/.exec(text);
  if (field) {
    const [, provider, name] = field;
    const hint = name === "apiKey" ? ` (the key, or the name of the environment variable holding it; a server that takes none, such as Ollama, accepts any value: "apiKey": "${provider}")` : "";
    return `${modelsFile}: providers.${provider}.${name}: required when the provider defines models${hint}`;
  }
  const model = /^Provider ([^:,]+), model ([^:]+): (.*)$/.exec(text);
  if (model) return `${modelsFile}: providers.${model[1]} (model "${model[2]}"): ${model[3]}`;
  const provider = /^Provider ([^:,]+): (.*)$/.exec(text);
  if (provider) return `${modelsFile}: providers.${provider[1]}: ${provider[2]}`;
  return `${modelsFile}: ${text}`;
}

/**
 * Finds `<provider>/<modelId>` among pi-ai's built-in models and data/models.json, and checks that
 * credentials exist (an auth profile for the provider, or one pi finds itself), so a missing key is a clear startup message and not an error at the first chat.
 */
export function resolveModel(provider: string, modelId: string, paths: ModelPaths, hasProfile: (provider: string) => boolean = () => false): ResolvedModel {
  const authStorage = AuthStorage.create(paths.authFile);
  const modelRegistry = ModelRegistry.create(authStorage, paths.modelsFile);
  const loadError = modelRegistry.getError();
  if (loadError) throw new ModelSetupError(modelsFileError(paths.modelsFile, loadError));
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
  return { model, authStorage, modelRegistry, modelsFile: paths.modelsFile };
}
