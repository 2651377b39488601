import { approvalTextLimit } from "@mom/contracts";
import type { LoadedConfig } from "./load-config.js";
import type { AdapterConfig } from "./schema.js";

/** Adapter `name` of config.json, which must be of `type`; the error names the file and the entry. */
export function adapterEntry<T extends AdapterConfig["type"]>(loaded: LoadedConfig, name: string, type: T): Extract<AdapterConfig, { type: T }> {
  const entry = loaded.config.adapters[name];
  if (!entry || entry.type !== type) throw new Error(`${loaded.paths.configFile}: /adapters/${name}: not a ${type} adapter`);
  return entry as Extract<AdapterConfig, { type: T }>;
}

/** How many characters of a tool call's arguments the adapter's approval prompt shows whole (an external adapter says so itself). */
export function adapterApprovalLimit(entry: AdapterConfig | undefined): number {
  if (entry?.type === "external") return entry.approvalTextLimit ?? approvalTextLimit(undefined);
  return approvalTextLimit(entry?.type);
}
