import type { LoadedConfig } from "./load-config.js";
import type { AdapterConfig } from "./schema.js";

/** Adapter `name` of config.json, which must be of `type`; the error names the file and the entry. */
export function adapterEntry<T extends AdapterConfig["type"]>(loaded: LoadedConfig, name: string, type: T): Extract<AdapterConfig, { type: T }> {
  const entry = loaded.config.adapters[name];
  if (!entry || entry.type !== type) throw new Error(`${loaded.paths.configFile}: /adapters/${name}: not a ${type} adapter`);
  return entry as Extract<AdapterConfig, { type: T }>;
}
