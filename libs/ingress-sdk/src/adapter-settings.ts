import { ConfigError, type LoadedConfig, schemaChecker } from "@mom/config";
import { DEFAULT_ATTACHMENT_DOWNLOAD_MS, DEFAULT_MAX_ATTACHMENT_BYTES } from "@mom/render";
import type { Static, TSchema } from "typebox";
import type { IngressDefinition } from "./platform.js";

/** The fields every adapter has, validated by mom's config schema. */
export interface AdapterAccess {
  admins?: string[];
  dm?: "everyone" | "none" | string[];
}

/** One adapter of config.json as its ingress runs it. */
export interface AdapterSettings<T> {
  adapter: string;
  access: AdapterAccess;
  maxAttachmentBytes: number;
  /** config `attachments.downloadSeconds`, in ms (default 120 s). */
  attachmentDownloadMs?: number;
  settings: T;
}

const COMMON = new Set(["type", "busy", "admins", "dm", "platform", "settings", "approvalTextLimit"]);
const ENV_REF = /^env:([A-Za-z_][A-Za-z0-9_]*)$/;

/**
 * Adapter `name` of a loaded config.json for `def`: a built-in adapter of that `type` (its
 * settings are the entry's own fields) or an `external` one of that `platform` (its `settings`).
 * The platform settings are checked against the ingress's schema and their `"env:NAME"` strings
 * resolved; a problem throws a ConfigError naming the file, the JSON path and what was expected.
 */
export function adapterSettings<S extends TSchema>(def: IngressDefinition<S>, loaded: LoadedConfig, name: string, env: NodeJS.ProcessEnv = process.env): AdapterSettings<Static<S>> {
  const file = loaded.paths.configFile;
  const entry = loaded.config.adapters[name] as Record<string, unknown> | undefined;
  if (!entry) throw new ConfigError(file, [{ path: `/adapters/${name}`, message: `no such adapter (configured: ${Object.keys(loaded.config.adapters).join(", ") || "none"})` }]);
  const external = entry.type === "external";
  const platform = external ? entry.platform : entry.type;
  if (platform !== def.platform) {
    throw new ConfigError(file, [{ path: `/adapters/${name}`, message: `expected a ${def.platform} adapter (type "${def.platform}", or type "external" with platform "${def.platform}"), got ${external ? `an external ${String(platform)} adapter` : `type "${String(platform)}"`}` }]);
  }
  const at = external ? `/adapters/${name}/settings` : `/adapters/${name}`;
  const raw = external ? { ...((entry.settings as Record<string, unknown>) ?? {}) } : Object.fromEntries(Object.entries(entry).filter(([k]) => !COMMON.has(k)));
  const missing: { path: string; message: string }[] = [];
  for (const [key, value] of Object.entries(raw)) {
    const ref = typeof value === "string" ? ENV_REF.exec(value) : null;
    if (!ref) continue;
    if (env[ref[1]!]) raw[key] = env[ref[1]!];
    else missing.push({ path: `${at}/${key}`, message: `environment variable ${ref[1]} is not set` });
  }
  const issues = [...schemaChecker(def.settings)(raw).map((i) => ({ path: `${at}${i.path === "/" ? "" : i.path}`, message: i.message })), ...missing];
  if (issues.length > 0) throw new ConfigError(file, issues);
  const access = entry as AdapterAccess;
  return {
    adapter: name,
    access: { ...(access.admins && { admins: access.admins }), ...(access.dm !== undefined && { dm: access.dm }) },
    maxAttachmentBytes: loaded.config.attachments.maxBytes ?? DEFAULT_MAX_ATTACHMENT_BYTES,
    attachmentDownloadMs: (loaded.config.attachments.downloadSeconds ?? DEFAULT_ATTACHMENT_DOWNLOAD_MS / 1000) * 1000,
    settings: raw as Static<S>,
  };
}
