import { CommandError } from "./command-error.js";
import { authConfigIssues, CooldownBoard, credentialOrder, maskSecret, setupTokenProblem } from "@mom/auth";
import { Bus } from "@mom/bus";
import { type AuthProfile, ConfigError, createLogger, editConfigFile, type LoadedConfig, loadAuthProfiles, loadConfig, redactNatsUrl, saveAuthProfiles } from "@mom/config";
import type { Readable } from "node:stream";
import { type NatsTarget, natsTargetFor } from "./nats-target.js";
import { Command, CommanderError } from "commander";
import { registerAuth } from "./command-spec.js";
import { dataDirOf, existingDataDir, strict } from "./data-dir.js";

/** Where a command's dialogue goes: tests pass their own streams. */
export interface Terminal {
  input: Readable;
  write: (text: string) => void;
}

/** One line from the terminal (the pasted secret), not echoed when the input is a TTY. */
function readLine(t: Terminal, prompt: string): Promise<string> {
  t.write(prompt);
  const tty = t.input as NodeJS.ReadStream;
  if (tty.isTTY && typeof tty.setRawMode === "function") return readHidden(tty, t);
  return new Promise((resolve, reject) => {
    let buf = "";
    const finish = (line: string | undefined) => {
      t.input.off("data", onData);
      t.input.off("end", onEnd);
      t.input.pause();
      if (line) resolve(line.trim());
      else reject(new CommandError("no input: paste the secret on standard input"));
    };
    const onData = (chunk: Buffer | string) => {
      buf += chunk.toString();
      const nl = buf.indexOf("\n");
      if (nl >= 0) finish(buf.slice(0, nl));
    };
    const onEnd = () => finish(buf.trim() || undefined);
    t.input.on("data", onData);
    t.input.once("end", onEnd);
  });
}

function readHidden(tty: NodeJS.ReadStream, t: Terminal): Promise<string> {
  return new Promise((resolve, reject) => {
    let line = "";
    tty.setRawMode(true);
    tty.setEncoding("utf8");
    const onData = (chunk: string) => {
      for (const c of chunk) {
        if (c === "\u0003" || c === "\u0004" || c === "\r" || c === "\n") {
          tty.off("data", onData);
          tty.setRawMode(false);
          tty.pause();
          t.write("\n");
          if (c === "\r" || c === "\n") return line.trim() ? resolve(line.trim()) : reject(new CommandError("nothing pasted"));
          return reject(new CommandError("cancelled"));
        }
        if (c === "\u007f" || c === "\b") line = line.slice(0, -1);
        else line += c;
      }
    };
    tty.on("data", onData);
    tty.resume();
  });
}

function uniqueId(profiles: AuthProfile[], base: string): string {
  if (!profiles.some((p) => p.id === base)) return base;
  for (let n = 2; ; n++) if (!profiles.some((p) => p.id === `${base}-${n}`)) return `${base}-${n}`;
}

/** `mom auth …` with its arguments as typed, e.g. ["list", "--data", "DIR"]; returns the exit code. */
export async function authCommand(args: string[], t: Terminal): Promise<number> {
  let code = 0;
  const root = strict(new Command("mom"), t.write);
  registerAuth(root, { print: (text) => t.write(`${text}\n`), terminal: t, setExitCode: (c) => (code = c) });
  try {
    await root.parseAsync(["auth", ...args], { from: "user" });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    throw err;
  }
  return code;
}

/** One `mom auth` sub-command, its arguments parsed; returns the exit code. */
export async function authRun(sub: "list" | "add" | "remove" | "order", rest: string[], values: { data?: string; "setup-token"?: boolean; "api-key"?: boolean; setupToken?: boolean; apiKey?: boolean; id?: string; secret?: string }, t: Terminal): Promise<number> {
  values = { ...values, "setup-token": values.setupToken ?? values["setup-token"], "api-key": values.apiKey ?? values["api-key"] };
  const loaded = loadConfig(existingDataDir(dataDirOf(values)));
  const file = loaded.paths.authProfilesFile;
  switch (sub) {
    case "list":
      t.write(`${await listProfiles(loaded)}\n`);
      return 0;
    case "add": {
      const provider = rest[0];
      if (!provider) break;
      if (!!values["setup-token"] === !!values["api-key"]) throw new CommandError("mom auth add: give one of --setup-token (a Claude subscription) or --api-key");
      const { profiles } = loadAuthProfiles(file);
      if (values["setup-token"]) {
        if (provider !== "anthropic") throw new CommandError("--setup-token is for anthropic (a Claude subscription); other providers take --api-key");
        t.write("Run `claude setup-token` in another terminal: it signs you in to your Claude subscription and prints a token starting with sk-ant-oat01-.\n");
        const token = await readLine(t, "Paste the token: ");
        const problem = setupTokenProblem(token);
        if (problem) throw new ConfigError("setup token", [{ path: "", message: problem }]);
        const id = values.id ?? uniqueId(profiles, "anthropic-subscription");
        saveAuthProfiles(file, { profiles: [{ id, provider, type: "token", secret: token }, ...profiles] });
        const ordered = loaded.config.auth.order[provider];
        if (ordered) editConfigFile(loaded.paths.configFile, (raw) => void (raw.auth.order[provider] = [id, ...ordered.filter((x) => x !== id)]));
        t.write(`Stored ${id} (${maskSecret(token)}) in ${file}; it is now ${provider}'s first credential.\n`);
        return 0;
      }
      const secret = values.secret ?? (await readLine(t, `Paste the ${provider} API key: `));
      if (!secret) throw new ConfigError("api key", [{ path: "", message: "empty: nothing stored" }]);
      if (provider === "anthropic" && secret.startsWith("sk-ant-oat")) throw new CommandError("this is a Claude subscription token: use `mom auth add anthropic --setup-token`");
      const id = values.id ?? uniqueId(profiles, `${provider}-key`);
      saveAuthProfiles(file, { profiles: [...profiles, { id, provider, type: "api_key", secret }] });
      t.write(`Stored ${id} (${maskSecret(secret)}) in ${file}.\n`);
      return 0;
    }
    case "remove": {
      const id = rest[0];
      if (!id) break;
      const { profiles } = loadAuthProfiles(file);
      if (!profiles.some((p) => p.id === id)) throw new CommandError(`no auth profile ${JSON.stringify(id)} in ${file} (profiles: ${profiles.map((p) => p.id).join(", ") || "none"})`);
      const referenced = Object.values(loaded.config.auth.order).some((ids) => ids.includes(id)) || Object.values(loaded.config.channels).some((c) => c.authProfile === id);
      if (referenced) {
        editConfigFile(loaded.paths.configFile, (raw) => {
          for (const [provider, ids] of Object.entries((raw.auth?.order ?? {}) as Record<string, string[]>)) raw.auth.order[provider] = ids.filter((x) => x !== id);
          for (const c of Object.values((raw.channels ?? {}) as Record<string, { authProfile?: string }>)) if (c.authProfile === id) delete c.authProfile;
        });
      }
      saveAuthProfiles(file, { profiles: profiles.filter((p) => p.id !== id) });
      t.write(`Removed ${id}${referenced ? ` (and its mentions in ${loaded.paths.configFile})` : ""}.\n`);
      return 0;
    }
    case "order": {
      const [provider, ...ids] = rest;
      if (!provider) break;
      if (ids.length) {
        const { profiles } = loadAuthProfiles(file);
        const issues = authConfigIssues({ ...loaded.config, auth: { order: { [provider]: ids } }, channels: {} }, profiles);
        if (issues.length) throw new ConfigError(loaded.paths.configFile, issues);
        editConfigFile(loaded.paths.configFile, (raw) => {
          raw.auth ??= {};
          raw.auth.order ??= {};
          raw.auth.order[provider] = ids;
        });
        t.write(`auth.order.${provider} = ${ids.join(", ")}\n`);
      } else {
        t.write(`auth.order.${provider} = ${(loaded.config.auth.order[provider] ?? []).join(", ") || "(not set: file order)"}\n`);
      }
      return 0;
    }
  }
  throw new CommandError(`mom auth ${sub}: missing argument (\`mom auth ${sub} --help\`)`);
}

/** Cooldowns live in NATS; without it the list still shows the profiles. */
async function openBoard(loaded: LoadedConfig): Promise<{ board?: CooldownBoard; close: () => Promise<void>; problem?: string; url?: string }> {
  let nats: NatsTarget | undefined;
  try {
    // The NATS of this data dir's runners: the named one, the running `mom up`'s, or its store.
    nats = await natsTargetFor(loaded);
    const bus = await Bus.connect({ url: nats.url, name: "mom-auth", namespace: loaded.config.nats.namespace, logger: createLogger("mom-auth", { level: "silent" }) });
    const target = nats;
    return { board: await CooldownBoard.open(bus), close: async () => (await bus.drain(), await target.close()), url: nats.url };
  } catch (err) {
    await nats?.close();
    return { close: async () => {}, problem: (err as Error).message, url: nats?.url };
  }
}

async function listProfiles(loaded: LoadedConfig): Promise<string> {
  const { profiles } = loadAuthProfiles(loaded.paths.authProfilesFile);
  const providers = [...new Set([...profiles.map((p) => p.provider), ...Object.keys(loaded.config.auth.order)])];
  if (providers.length === 0) return `no auth profiles in ${loaded.paths.authProfilesFile} (add one with \`mom auth add <provider> --api-key\`)`;
  const { board, close, problem, url } = await openBoard(loaded);
  const lines: string[] = [];
  try {
    for (const provider of providers) {
      lines.push(`${provider}:`);
      const order = credentialOrder({ provider, config: loaded.config, profiles, hasDefault: false });
      for (const [i, c] of order.entries()) {
        const p = c.profile!;
        const pins = Object.entries(loaded.config.channels).filter(([, s]) => s.authProfile === p.id).map(([ch]) => ch);
        const state = board ? await board.state(provider, p.id) : undefined;
        const until = state?.cooldownUntil && Date.parse(state.cooldownUntil) > Date.now() ? `cooling down until ${state.cooldownUntil} (${state.reason})` : "";
        const expired = p.expiresAt && Date.parse(p.expiresAt) <= Date.now() ? `expired ${p.expiresAt}` : p.expiresAt ? `expires ${p.expiresAt}` : "";
        const used = state?.lastUsedAt ? `last used ${state.lastUsedAt}` : "";
        lines.push(`  ${i + 1}. ${p.id}  ${p.type}  ${maskSecret(p.secret)}${[pins.length ? `pinned by ${pins.join(", ")}` : "", expired, until, used].filter(Boolean).map((x) => `  ${x}`).join("")}`);
      }
      lines.push(`  then: the environment (${provider === "anthropic" ? "ANTHROPIC_OAUTH_TOKEN, ANTHROPIC_API_KEY" : "the provider's API key variable"}) or models.json`);
    }
  } finally {
    await close();
  }
  if (problem) lines.push(`(cooldowns not shown: ${url ? `NATS at ${redactNatsUrl(url)} not reachable` : problem})`);
  return lines.join("\n");
}
