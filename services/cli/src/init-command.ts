import { ModelSetupError, resolveModel } from "@mom/agent";
import { authConfigIssues, maskSecret, setupTokenProblem } from "@mom/auth";
import { type AuthProfile, ConfigError, loadAuthProfiles, loadConfig, saveAuthProfiles } from "@mom/config";
import { getModels, getProviders, type KnownProvider } from "@mariozechner/pi-ai";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { type Readable, Writable } from "node:stream";
import { CommandError } from "./command-error.js";
import { probeModel } from "./model-probe.js";

/** `mom init`'s flags: every question has one, so scripts and tests need no terminal. */
export interface InitOptions {
  data: string;
  /** A pi-ai provider (anthropic, openai, …), or the name of a custom OpenAI-compatible one (with --base-url). */
  provider?: string;
  model?: string;
  /** An OpenAI-compatible endpoint (Ollama: http://localhost:11434/v1). */
  baseUrl?: string;
  apiKey?: string;
  setupToken?: string;
  /** USD per million tokens, "input,output" (custom models). */
  cost?: string;
  /** Comma-separated: slack, discord, telegram, whatsapp (the terminal chat is always there). */
  adapters?: string;
  whatsappPhoneNumberId?: string;
  /** Skip the live model call. */
  check?: boolean;
  force?: boolean;
  /** No questions: defaults where there are some, else an error naming the flag. */
  yes?: boolean;
}

export interface InitIo {
  input: Readable;
  write: (text: string) => void;
  /** Whether the input is a terminal: then a pasted secret is not echoed. */
  tty?: boolean;
}

const DEFAULT_MODEL: Record<string, string> = { anthropic: "claude-sonnet-4-5" };
const ADAPTERS = ["slack", "discord", "telegram", "whatsapp"] as const;
type AdapterType = (typeof ADAPTERS)[number];

/** Lines from the input, one per question, whether it is a terminal or a pipe (lines that came early wait). */
class Questions {
  private lines: string[] = [];
  private waiting: ((line: string | undefined) => void) | undefined;
  private closed = false;
  private muted = false;
  private readonly rl;
  constructor(private readonly io: InitIo) {
    const output = new Writable({
      write: (chunk: Buffer | string, _enc, done) => {
        if (!this.muted) io.write(chunk.toString());
        done();
      },
    });
    this.rl = createInterface({ input: io.input, output, terminal: io.tty === true });
    this.rl.on("line", (line) => {
      if (this.waiting) {
        const w = this.waiting;
        this.waiting = undefined;
        w(line);
      } else this.lines.push(line);
    });
    this.rl.on("close", () => {
      this.closed = true;
      this.waiting?.(undefined);
    });
  }

  async ask(prompt: string, o: { secret?: boolean; flag: string; fallback?: string }): Promise<string> {
    this.io.write(prompt);
    const line = await new Promise<string | undefined>((resolve) => {
      if (this.lines.length) return resolve(this.lines.shift());
      if (this.closed) return resolve(undefined);
      this.muted = o.secret === true && this.io.tty === true;
      this.waiting = resolve;
    });
    if (this.muted) {
      this.muted = false;
      this.io.write("\n");
    } else if (line === undefined) this.io.write("\n");
    const answer = line?.trim() ?? "";
    if (answer) return answer;
    if (o.fallback !== undefined) return o.fallback;
    throw new CommandError(line === undefined ? `no answer on standard input: give ${o.flag}` : `an answer is needed (or give ${o.flag})`);
  }

  close(): void {
    this.rl.close();
  }
}

function parseCost(value: string): { input: number; output: number } {
  const parts = value.split(",").map((x) => Number(x.trim()));
  if (parts.length !== 2 || parts.some((x) => !Number.isFinite(x) || x < 0)) throw new CommandError(`--cost: expected "input,output" in USD per million tokens (e.g. 0.2,0.6), got ${JSON.stringify(value)}`);
  return { input: parts[0]!, output: parts[1]! };
}

function parseAdapters(value: string): AdapterType[] {
  const list = value.split(",").map((x) => x.trim().toLowerCase()).filter((x) => x && x !== "none" && x !== "cli");
  for (const a of list) if (!(ADAPTERS as readonly string[]).includes(a)) throw new CommandError(`--adapters: unknown adapter "${a}"; known: ${ADAPTERS.join(", ")}`);
  return [...new Set(list)] as AdapterType[];
}

const envName = (adapter: string, field: string) => `${adapter.toUpperCase()}_${field.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;

/** Each adapter's secrets as env references: config.json names the variable, the value stays out of the file. */
function adapterEntry(type: AdapterType, phoneNumberId?: string): { entry: Record<string, unknown>; env: string[] } {
  const fields: Record<AdapterType, string[]> = { slack: ["botToken", "appToken"], discord: ["botToken"], telegram: ["botToken"], whatsapp: ["accessToken", "appSecret", "verifyToken"] };
  const entry: Record<string, unknown> = { type };
  const env: string[] = [];
  for (const f of fields[type]) {
    const name = envName(type, f);
    entry[f] = `env:${name}`;
    env.push(name);
  }
  if (type === "whatsapp") entry.phoneNumberId = phoneNumberId;
  return { entry, env };
}

/**
 * `mom init`: asks for the model (a pi-ai provider with its key or Claude setup-token, or an
 * OpenAI-compatible URL such as Ollama's) and the adapters, checks the model with one tiny real
 * call, and writes config.json, models.json and auth-profiles.json — validated as mom loads them,
 * in a scratch dir first, so nothing half-written is left behind.
 */
export async function initCommand(o: InitOptions, io: InitIo): Promise<number> {
  const dataDir = o.data;
  const configFile = join(dataDir, "config.json");
  if (existsSync(configFile) && !o.force) throw new CommandError(`${configFile} exists: \`mom init --force\` replaces it (and models.json, and adds to auth-profiles.json)`);
  const q = new Questions(io);
  try {
    const ask = (prompt: string, flag: string, fallback?: string, secret?: boolean) =>
      o.yes
        ? fallback !== undefined
          ? Promise.resolve(fallback)
          : Promise.reject(new CommandError(`-y asks nothing: give ${flag}`))
        : q.ask(prompt, { flag, ...(fallback !== undefined && { fallback }), ...(secret && { secret }) });
    const known = getProviders() as string[];

    // The model: a pi-ai provider, or an OpenAI-compatible URL.
    let provider = o.provider;
    let baseUrl = o.baseUrl;
    if (!provider && !baseUrl) {
      const answer = await ask(`Model provider (${["anthropic", "openai", "google", "openrouter"].filter((p) => known.includes(p)).join(", ")}, … or an OpenAI-compatible URL such as http://localhost:11434/v1 for Ollama) [anthropic]: `, "--provider or --base-url", "anthropic");
      if (/^https?:\/\//i.test(answer)) baseUrl = answer;
      else provider = answer;
    }
    const custom = baseUrl !== undefined;
    if (custom) {
      try {
        new URL(baseUrl!);
      } catch {
        throw new CommandError(`--base-url: not a URL: ${JSON.stringify(baseUrl)}`);
      }
      provider ??= /:11434\b/.test(baseUrl!) ? "ollama" : "local";
      if (!/^[a-z0-9][a-z0-9._-]*$/i.test(provider)) throw new CommandError(`--provider: a custom provider's name is letters, digits, "-", "_", "." (got ${JSON.stringify(provider)})`);
    } else if (!known.includes(provider!)) {
      throw new CommandError(`unknown provider "${provider}": pi-ai knows ${known.join(", ")}; an OpenAI-compatible server (Ollama, vLLM, LM Studio) is given with --base-url`);
    }

    let modelId = o.model;
    if (!modelId) {
      const served = custom ? await listServedModels(baseUrl!, o.apiKey) : (getModels(provider as KnownProvider) as Array<{ id: string }>).map((m) => m.id);
      const hint = served.length ? ` (${custom ? "the server serves" : "e.g."} ${served.slice(0, 6).join(", ")}${served.length > 6 ? ", …" : ""})` : "";
      const fallback = custom ? served[0] : (DEFAULT_MODEL[provider!] ?? served[0]);
      modelId = await ask(`Model id${hint}${fallback ? ` [${fallback}]` : ""}: `, "--model", fallback);
    }

    // The credential.
    let profile: AuthProfile | undefined;
    let customKey: string | undefined;
    if (custom) {
      customKey = o.apiKey ?? (await ask("API key of the server (Enter: none — Ollama needs none): ", "--api-key", "", true));
    } else {
      let token = o.setupToken;
      let key = o.apiKey;
      if (!token && !key) {
        if (provider === "anthropic") {
          const kind = await ask("Claude subscription setup-token (from `claude setup-token`) or an API key? [token/key]: ", "--setup-token or --api-key");
          if (/^t/i.test(kind)) token = await ask("Paste the token (sk-ant-oat01-…): ", "--setup-token", undefined, true);
          else key = await ask("Paste the Anthropic API key: ", "--api-key", undefined, true);
        } else {
          key = await ask(`Paste the ${provider} API key: `, "--api-key", undefined, true);
        }
      }
      if (token) {
        if (provider !== "anthropic") throw new CommandError("--setup-token is for anthropic (a Claude subscription); other providers take --api-key");
        const problem = setupTokenProblem(token);
        if (problem) throw new ConfigError("setup token", [{ path: "", message: problem }]);
        profile = { id: "anthropic-subscription", provider: "anthropic", type: "token", secret: token } as AuthProfile;
      } else if (key) {
        if (provider === "anthropic" && key.startsWith("sk-ant-oat")) throw new CommandError("this is a Claude subscription token: give it with --setup-token");
        profile = { id: `${provider}-key`, provider: provider!, type: "api_key", secret: key } as AuthProfile;
      }
    }

    // Prices of a custom model: without them usage says $?.
    let cost: { input: number; output: number } | undefined;
    if (o.cost) cost = parseCost(o.cost);
    else if (custom && !o.yes) {
      const answer = await q.ask("Prices in USD per million tokens, input,output (e.g. 0.2,0.6; 0,0 for a free local model; Enter: unknown — usage then shows $?): ", { flag: "--cost", fallback: "" });
      if (answer) cost = parseCost(answer);
    }

    // The adapters besides the terminal chat.
    const adapters = parseAdapters(o.adapters ?? (await ask(`Chat platforms to enable besides the terminal (${ADAPTERS.join(", ")}; comma-separated) [none]: `, "--adapters", "")));
    let phoneNumberId = o.whatsappPhoneNumberId;
    if (adapters.includes("whatsapp") && !phoneNumberId) phoneNumberId = await ask("WhatsApp phone number id (digits, from WhatsApp > API Setup): ", "--whatsapp-phone-number-id");

    // The files, written and loaded in a scratch dir first.
    const config: Record<string, unknown> = { model: `${provider}/${modelId}` };
    const envNeeded: string[] = [];
    if (adapters.length) {
      // Declaring adapters replaces the default cli entry: the terminal chat is kept explicitly.
      const entries: Record<string, unknown> = { cli: { type: "cli" } };
      for (const a of adapters) {
        const { entry, env } = adapterEntry(a, phoneNumberId);
        entries[a] = entry;
        envNeeded.push(...env);
      }
      config.adapters = entries;
    }
    const models = custom
      ? {
          providers: {
            [provider!]: {
              baseUrl,
              api: "openai-completions",
              // Required by pi even when the server takes no key (any value then).
              apiKey: customKey || provider,
              compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
              models: [{ id: modelId, name: modelId, ...(cost && { cost: { ...cost, cacheRead: 0, cacheWrite: 0 } }) }],
            },
          },
        }
      : undefined;
    const scratch = mkdtempSync(join(tmpdir(), "mom-init-"));
    try {
      writeFileSync(join(scratch, "config.json"), `${JSON.stringify(config, null, 2)}\n`);
      if (models) writeFileSync(join(scratch, "models.json"), `${JSON.stringify(models, null, 2)}\n`);
      const existingProfiles = existsSync(join(dataDir, "auth-profiles.json")) ? loadAuthProfiles(join(dataDir, "auth-profiles.json")).profiles : [];
      const profiles = profile ? [profile, ...existingProfiles.filter((p) => p.id !== profile!.id)] : existingProfiles;
      if (profiles.length) saveAuthProfiles(join(scratch, "auth-profiles.json"), { profiles });
      // The same validation as every service's start: schema, models.json, credentials.
      const loaded = loadConfig(scratch, {});
      const issues = authConfigIssues(loaded.config, profiles);
      if (issues.length) throw new ConfigError(join(dataDir, "config.json"), issues);
      const resolved = resolveModel(provider!, modelId, loaded.paths, (p) => profiles.some((x) => x.provider === p));
      if (o.check !== false) {
        io.write(`Checking ${provider}/${modelId} with a one-word call… `);
        const problem = await probeModel(resolved, profiles, scratch, join(scratch, "models.json"));
        if (problem) {
          io.write("failed.\n");
          throw new CommandError(`${problem.replaceAll(scratch, dataDir)}\n(nothing written; \`mom init --no-check\` writes the files without this check)`);
        }
        io.write("it answered.\n");
      }
      mkdirSync(dataDir, { recursive: true });
      for (const f of ["config.json", "models.json", "auth-profiles.json"]) if (existsSync(join(scratch, f))) copyFileSync(join(scratch, f), join(dataDir, f));
      if (existsSync(join(dataDir, "auth-profiles.json"))) chmodSync(join(dataDir, "auth-profiles.json"), 0o600);
    } catch (err) {
      if (err instanceof ModelSetupError || err instanceof ConfigError) throw new CommandError(err.message.replaceAll(scratch, dataDir));
      throw err;
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }

    const wrote = [configFile, ...(models ? [join(dataDir, "models.json")] : []), ...(profile ? [`${join(dataDir, "auth-profiles.json")} (${profile.id}: ${maskSecret(profile.secret)})`] : [])];
    io.write(`Wrote ${wrote.join(", ")}.\n`);
    if (custom && !cost) io.write(`No prices for ${provider}/${modelId}: usage lines show $? (add "cost" to its entry in models.json; docs/auth.md).\n`);
    if (envNeeded.length) io.write(`Before \`mom up\`, set ${envNeeded.join(", ")} (config.json refers to them as env:NAME; docs/${adapters[0]}.md says where each comes from).\n`);
    io.write(`Next: \`mom up${dataDir === "data" ? "" : ` ${dataDir}`}\` (or \`npm start\`), and \`mom doctor\` to check everything.\n`);
    return 0;
  } finally {
    q.close();
  }
}

/** The ids an OpenAI-compatible server lists at GET /models (none when it has no list or cannot be reached). */
async function listServedModels(baseUrl: string, apiKey: string | undefined): Promise<string[]> {
  try {
    const res = await fetch(`${baseUrl.replace(/\/$/, "")}/models`, { headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {}, signal: AbortSignal.timeout(5000) });
    if (!res.ok) return [];
    const data = ((await res.json()) as { data?: Array<{ id?: unknown }> }).data;
    return Array.isArray(data) ? data.map((m) => String(m.id)) : [];
  } catch {
    return [];
  }
}
