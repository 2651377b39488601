import ipaddr from "ipaddr.js";
import { join, resolve } from "node:path";
import { Compile } from "typebox/compile";
import { ConfigError } from "./config-error.js";
import { defaultConfig, withDefaults } from "./defaults.js";
import { readJsonFile, schemaChecker } from "./json-file.js";
import { isNatsUrl, NATS_URL_EXPECTED, redactNatsUrl } from "./nats-url.js";
import { MomConfig, MomConfigFile } from "./schema.js";
import { schemaIssues, show, type Issue } from "./schema-issues.js";

export interface ConfigPaths {
  dataDir: string;
  configFile: string;
  modelsFile: string;
  authFile: string;
  /** mom's auth profiles (docs/auth.md), mode 0600 */
  authProfilesFile: string;
  workspaceDir: string;
}

export interface LoadedConfig {
  config: MomConfig;
  paths: ConfigPaths;
}

const checkFile = schemaChecker(MomConfigFile);
const checkModel = Compile(MomConfig.properties.model);

/**
 * Which `"env:NAME"` references a service resolves: only the secrets it uses. The others stay
 * as written, so a service never holds (nor needs) another service's tokens.
 */
export interface SecretsToResolve {
  /** Adapters whose tokens this service uses (an ingress: its own). */
  adapters?: string[];
  /** `sandbox.env` (the runner). */
  sandbox?: boolean;
  /** `console.users.*.token` (the web console). */
  console?: boolean;
}

/**
 * Reads `<dataDir>/config.json` (absent means all defaults), validates it, fills defaults and
 * applies env overrides. Throws ConfigError naming file or variable, JSON path and expectation.
 */
export function loadConfig(dataDir: string, env: NodeJS.ProcessEnv = process.env, secrets: SecretsToResolve = {}): LoadedConfig {
  const abs = resolve(dataDir);
  const paths: ConfigPaths = {
    dataDir: abs,
    configFile: join(abs, "config.json"),
    modelsFile: join(abs, "models.json"),
    authFile: join(abs, "auth.json"),
    authProfilesFile: join(abs, "auth-profiles.json"),
    workspaceDir: join(abs, "workspace"),
  };
  // Messages show the path the way the operator typed it (data/config.json), not the absolute one.
  const shown = join(dataDir, "config.json");
  const config = withDefaults(readConfigFile(paths.configFile, shown));
  resolveEnvRefs(config, env, shown, secrets);
  applyEnv(config, env);
  return { config, paths };
}

function readConfigFile(file: string, shown: string): MomConfigFile {
  const raw = readJsonFile(file, shown, (r) => [...checkFile(r), ...semanticProblems(r)]);
  return (raw ?? {}) as MomConfigFile;
}

// Rules JSON Schema cannot say well; checked even when the schema failed, so one run lists all.
function semanticProblems(raw: unknown): Issue[] {
  const issues: Issue[] = [];
  const r = raw as { nats?: { url?: unknown }; adapters?: unknown; sandbox?: { sharedWriters?: unknown }; web?: { privateRanges?: unknown }; console?: { trustedProxies?: unknown }; spawn?: Record<string, unknown>; send?: { routes?: unknown } } | null;
  const url = r?.nats?.url;
  if (typeof url === "string" && url !== "" && !isNatsUrl(url)) {
    issues.push({ path: "/nats/url", message: `expected ${NATS_URL_EXPECTED}, got ${show(redactNatsUrl(url))}` });
  }
  // A trusted writer of another deployment's adapter (a typo) would trust nobody, silently.
  const writers = r?.sandbox?.sharedWriters;
  const adapters = r?.adapters && typeof r.adapters === "object" ? Object.keys(r.adapters) : Object.keys(defaultConfig().adapters);
  if (Array.isArray(writers)) {
    writers.forEach((w, i) => {
      const adapter = typeof w === "string" ? w.split("/")[0] : undefined;
      if (adapter && w.includes("/") && !adapters.includes(adapter)) {
        issues.push({ path: `/sandbox/sharedWriters/${i}`, message: `no adapter "${adapter}" in adapters (adapters: ${adapters.join(", ") || "none"}), got ${show(w)}` });
      }
    });
  }
  // A route naming an adapter that does not exist would never apply: a typo must not pass silently.
  const routes = r?.send?.routes;
  if (Array.isArray(routes)) {
    routes.forEach((route: { from?: unknown; to?: unknown }, i) => {
      const check = (w: unknown, path: string) => {
        const adapter = typeof w === "string" && w.includes("/") ? w.split("/")[0] : undefined;
        if (adapter && !adapters.includes(adapter)) issues.push({ path, message: `no adapter "${adapter}" in adapters (adapters: ${adapters.join(", ") || "none"}), got ${show(w)}` });
      };
      check(route?.from, `/send/routes/${i}/from`);
      if (Array.isArray(route?.to)) route.to.forEach((w, j) => check(w, `/send/routes/${i}/to/${j}`));
    });
  }
  // A mistyped range would refuse every fetch it was meant to allow, or worse, allow more.
  const ranges = r?.web?.privateRanges;
  if (Array.isArray(ranges)) {
    ranges.forEach((cidr, i) => {
      if (typeof cidr === "string" && !isCidr(cidr)) issues.push({ path: `/web/privateRanges/${i}`, message: `expected a CIDR like 10.1.0.0/16 or fd00::/8, got ${show(cidr)}` });
    });
  }
  const proxies = r?.console?.trustedProxies;
  if (Array.isArray(proxies)) {
    proxies.forEach((cidr, i) => {
      if (typeof cidr === "string" && !isCidr(cidr)) issues.push({ path: `/console/trustedProxies/${i}`, message: `expected a CIDR like 10.42.0.0/16 or ::1/128, got ${show(cidr)}` });
    });
  }
  // A default budget above its cap would be lowered at every spawn: the operator meant something else.
  const spawn = { ...defaultConfig().spawn, ...(r?.spawn && typeof r.spawn === "object" ? r.spawn : {}) };
  for (const [value, cap] of [["tokens", "maxTokens"], ["seconds", "maxSeconds"]] as const) {
    const v = spawn[value];
    const c = spawn[cap];
    if (typeof v === "number" && typeof c === "number" && v > c) issues.push({ path: `/spawn/${value}`, message: `is ${v}, more than spawn.${cap} (${c}): raise spawn.${cap} or lower spawn.${value}` });
  }
  return issues;
}

function isCidr(text: string): boolean {
  try {
    ipaddr.parseCIDR(text);
    return true;
  } catch {
    return false;
  }
}

const ENV_REF = /^env:([A-Za-z_][A-Za-z0-9_]*)$/;
/** The adapter fields that may hold a secret as "env:NAME". */
const ADAPTER_SECRET_KEYS = ["botToken", "appToken", "accessToken", "appSecret", "verifyToken", "webhookSecret"];

/** Replaces the asked-for "env:NAME" values with the variable's value; a missing one names field and variable. */
function resolveEnvRefs(config: MomConfig, env: NodeJS.ProcessEnv, shown: string, secrets: SecretsToResolve): void {
  const issues: Issue[] = [];
  const resolveIn = (fields: Record<string, unknown>, keys: string[], at: string) => {
    for (const key of keys) {
      const value = fields[key];
      const ref = typeof value === "string" ? ENV_REF.exec(value) : null;
      if (!ref) continue;
      const resolved = env[ref[1]!];
      if (resolved) fields[key] = resolved;
      else issues.push({ path: `${at}/${key}`, message: `environment variable ${ref[1]} is not set` });
    }
  };
  for (const name of secrets.adapters ?? []) {
    const adapter = config.adapters[name];
    if (adapter) resolveIn(adapter as Record<string, unknown>, ADAPTER_SECRET_KEYS, `/adapters/${name}`);
  }
  const sandboxEnv = config.sandbox.env;
  if (secrets.sandbox && sandboxEnv) resolveIn(sandboxEnv, Object.keys(sandboxEnv), "/sandbox/env");
  if (secrets.console) for (const [name, user] of Object.entries(config.console.users)) resolveIn(user as Record<string, unknown>, ["token"], `/console/users/${name}`);
  if (issues.length > 0) throw new ConfigError(shown, issues);
}

/** The `env:` variables the config names that are not set, by JSON path (for `mom doctor`). */
export function unsetEnvRefs(config: MomConfig, env: NodeJS.ProcessEnv = process.env): { path: string; variable: string }[] {
  const out: { path: string; variable: string }[] = [];
  const check = (fields: Record<string, unknown>, at: string) => {
    for (const [key, value] of Object.entries(fields)) {
      const ref = typeof value === "string" ? ENV_REF.exec(value) : null;
      if (ref && !env[ref[1]!]) out.push({ path: `${at}/${key}`, variable: ref[1]! });
    }
  };
  for (const [name, adapter] of Object.entries(config.adapters)) check(adapter as Record<string, unknown>, `/adapters/${name}`);
  if (config.sandbox.env) check(config.sandbox.env, "/sandbox/env");
  for (const [name, user] of Object.entries(config.console.users)) check(user as Record<string, unknown>, `/console/users/${name}`);
  return out;
}

function applyEnv(config: MomConfig, env: NodeJS.ProcessEnv): void {
  const model = env.MOM_MODEL;
  if (model) {
    if (!checkModel.Check(model)) throw envError("MOM_MODEL", schemaIssues(MomConfig.properties.model, model)[0]!.message);
    config.model = model;
  }
  const url = env.NATS_URL;
  if (url) {
    if (!isNatsUrl(url)) throw envError("NATS_URL", `expected ${NATS_URL_EXPECTED}, got ${show(redactNatsUrl(url))}`);
    config.nats.url = url;
  }
}

function envError(name: string, message: string): ConfigError {
  return new ConfigError(`env ${name}`, [{ path: "", message }]);
}
