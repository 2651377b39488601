import { existsSync, readFileSync } from "node:fs";
import type { LoadedConfig } from "./load-config.js";

/**
 * The models a chat may name, as `<provider>/<modelId>`: config.json's `model` and its channels',
 * and every model models.json defines (the terminal's `/model`, the console's redrive form).
 */
export function configuredModels(loaded: LoadedConfig): string[] {
  const out = new Set([loaded.config.model, ...Object.values(loaded.config.channels).flatMap((c) => (c.model ? [c.model] : []))]);
  if (existsSync(loaded.paths.modelsFile)) {
    try {
      const parsed = JSON.parse(readFileSync(loaded.paths.modelsFile, "utf8")) as { providers?: Record<string, { models?: { id?: unknown }[] }> };
      for (const [provider, p] of Object.entries(parsed.providers ?? {})) for (const m of p.models ?? []) if (typeof m.id === "string") out.add(`${provider}/${m.id}`);
    } catch {
      // A broken models.json is the runner's to report; the list just lacks its models.
    }
  }
  return [...out];
}
