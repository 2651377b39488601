import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Compile } from "typebox/compile";
import { ConfigError } from "./config-error.js";
import { withDefaults } from "./defaults.js";
import { locateJsonError } from "./json-syntax.js";
import { isNatsUrl, NATS_URL_EXPECTED, redactNatsUrl } from "./nats-url.js";
import { MomConfig, MomConfigFile } from "./schema.js";
import { schemaIssues, show, type Issue } from "./schema-issues.js";

export interface ConfigPaths {
  dataDir: string;
  configFile: string;
  modelsFile: string;
  authFile: string;
  workspaceDir: string;
}

export interface LoadedConfig {
  config: MomConfig;
  paths: ConfigPaths;
}

const checkFile = Compile(MomConfigFile);
const checkModel = Compile(MomConfig.properties.model);

/**
 * Reads `<dataDir>/config.json` (absent means all defaults), validates it, fills defaults and
 * applies env overrides. Throws ConfigError naming file or variable, JSON path and expectation.
 */
export function loadConfig(dataDir: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const abs = resolve(dataDir);
  const paths: ConfigPaths = {
    dataDir: abs,
    configFile: join(abs, "config.json"),
    modelsFile: join(abs, "models.json"),
    authFile: join(abs, "auth.json"),
    workspaceDir: join(abs, "workspace"),
  };
  // Messages show the path the way the operator typed it (data/config.json), not the absolute one.
  const shown = join(dataDir, "config.json");
  const config = withDefaults(readConfigFile(paths.configFile, shown));
  resolveEnvTokens(config, env, shown);
  applyEnv(config, env);
  return { config, paths };
}

function readConfigFile(file: string, shown: string): MomConfigFile {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw new ConfigError(shown, [{ path: "", message: `cannot read: ${(err as Error).message}` }]);
  }
  // Editors on Windows like to save a byte-order mark; it is not a syntax error worth a stop.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    const at = locateJsonError(text);
    const where = at ? `line ${at.line}, column ${at.column}: ${at.reason}` : (err as Error).message;
    const hint = text.trim() === "" ? " (the file is empty; write {} to take every default)" : "";
    throw new ConfigError(shown, [{ path: "", message: `invalid JSON at ${where}${hint}` }]);
  }
  const issues = [...schemaProblems(raw), ...semanticProblems(raw)];
  if (issues.length > 0) throw new ConfigError(shown, issues);
  return raw as MomConfigFile;
}

function schemaProblems(raw: unknown): Issue[] {
  if (checkFile.Check(raw)) return [];
  const issues = schemaIssues(MomConfigFile, raw);
  if (issues.length > 0) return issues;
  // Our explainer missed a keyword; TypeBox's own wording is still better than nothing.
  return [...checkFile.Errors(raw)].map((e) => ({ path: e.instancePath || "/", message: e.message }));
}

// Rules JSON Schema cannot say well; checked even when the schema failed, so one run lists all.
function semanticProblems(raw: unknown): Issue[] {
  const url = (raw as { nats?: { url?: unknown } } | null)?.nats?.url;
  if (typeof url === "string" && url !== "" && !isNatsUrl(url)) {
    return [{ path: "/nats/url", message: `expected ${NATS_URL_EXPECTED}, got ${show(redactNatsUrl(url))}` }];
  }
  return [];
}

const ENV_REF = /^env:([A-Za-z_][A-Za-z0-9_]*)$/;

/** Replaces "env:NAME" token values with the variable's value; a missing one names field and variable. */
function resolveEnvTokens(config: MomConfig, env: NodeJS.ProcessEnv, shown: string): void {
  const issues: Issue[] = [];
  for (const [name, adapter] of Object.entries(config.adapters)) {
    const fields = adapter as Record<string, unknown>;
    for (const key of ["botToken", "appToken", "accessToken", "appSecret", "verifyToken", "webhookSecret"]) {
      const value = fields[key];
      const ref = typeof value === "string" ? ENV_REF.exec(value) : null;
      if (!ref) continue;
      const resolved = env[ref[1]!];
      if (resolved) fields[key] = resolved;
      else issues.push({ path: `/adapters/${name}/${key}`, message: `environment variable ${ref[1]} is not set` });
    }
  }
  if (issues.length > 0) throw new ConfigError(shown, issues);
}

// An empty variable counts as unset: compose files and k8s manifests often declare `NAME=`.
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
