import { type LoadedConfig, createLogger, loadConfig, redactNatsUrl, serviceLogger } from "@mom/config";
import { fstatSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { isatty } from "node:tty";
import { fileURLToPath } from "node:url";
import type { Logger } from "pino";
import { userInfo } from "node:os";
import { join } from "node:path";
import { startObservability } from "@mom/observability";
import { busOptions } from "@mom/bus";
import { CommandError } from "./command-error.js";
import { lockDataDir } from "./data-lock.js";
import { startLocalNats } from "./local-nats.js";
import { Supervisor } from "./supervisor.js";
import { announceLocalNats, explicitNatsUrl } from "./nats-target.js";

import { type Closer, EXIT, keepSignalsWhileStarting, type StopReason, shutdownOn as shutdownWith } from "./shutdown.js";

// Each command imports only the services it starts: a runner never loads Slack's or Discord's
// client, and an ingress never loads the agent (tens of MB of RSS per process).

/** What the process opened before its services (the observability server): closed after them. */
const processClosers: Closer[] = [];

/**
 * /healthz, /readyz and /metrics when MOM_HTTP_PORT or `observability.httpPort` is set, and OTLP
 * trace export when OTEL_EXPORTER_OTLP_ENDPOINT is (docs/observability.md). Started before the
 * services, so liveness answers while they start and readiness says they have not yet.
 */
async function observe(loaded: LoadedConfig, serviceName: string, logger: Logger): Promise<void> {
  try {
    const obs = await startObservability({ serviceName, httpPort: loaded.config.observability.httpPort, logger });
    processClosers.push(() => obs.close());
  } catch (err) {
    throw new CommandError((err as Error).message);
  }
}

/** A deployed service: closes in reverse order on SIGINT/SIGTERM (or when `done` fires) and exits. */
function shutdownOn(closers: Closer[], done?: Promise<void>): Promise<never> {
  return shutdownWith({ closers: [...processClosers, ...closers], done });
}

/** The name of the `cli` adapter in config.json; none when `adapters` declares only other platforms. */
function cliAdapterName(loaded: LoadedConfig): string | undefined {
  return Object.entries(loaded.config.adapters).find(([, a]) => a.type === "cli")?.[0];
}

// os.userInfo() throws for a uid without a passwd entry (containers running as an arbitrary uid).
function currentUser(): string {
  try {
    return userInfo().username || process.env.USER || "user";
  } catch {
    return process.env.USER || "user";
  }
}

/** The terminal chat on stdin/stdout; resolves `ended` when the input closes (Ctrl-D). */
async function terminalChat(adapter: string, loaded: LoadedConfig, url: string, logger: Logger) {
  const { chatModels, startCliIngress } = await import("@mom/ingress-cli");
  const me = currentUser();
  const channelId = process.env.MOM_CLI_CHANNEL || "local";
  let inputEnded!: () => void;
  const ended = new Promise<void>((r) => (inputEnded = r));
  const cli = await startCliIngress(
    {
      adapter,
      channelId,
      user: { id: me, username: me },
      input: process.stdin,
      output: { write: (t) => void process.stdout.write(t), isTTY: process.stdout.isTTY, get columns() { return process.stdout.columns; } },
      models: chatModels(loaded, `${adapter}/${channelId}`),
      logger,
      onInputEnd: inputEnded,
      downloadsDir: join(loaded.paths.dataDir, "downloads"),
      maxAttachmentBytes: loaded.config.attachments.maxBytes,
    },
    busOptions(loaded, url, `ingress-${adapter}`, logger),
  );
  return { close: () => cli.close(), ended };
}

/** How long a Ctrl-C may take: a run in progress is cut short, not waited for. */
const CTRL_C_DEADLINE_MS = 3500;

/** Where the `mom` executable is (the children of `mom up` run it again). */
const momBin = fileURLToPath(new URL("../bin/mom.js", import.meta.url));

/**
 * Whether `mom up` can chat on its standard input: a terminal, or input piped in (which ends the
 * chat, and `mom up`, when it ends). /dev/null or no stdin at all (systemd, `docker run` without
 * -i) is no one to chat with: `mom up` runs headless then, as with --no-chat.
 */
export function stdinCanChat(): boolean {
  if (isatty(0)) return true;
  try {
    const st = fstatSync(0);
    return st.isFIFO() || st.isFile() || st.isSocket();
  } catch {
    return false;
  }
}

export interface UpOptions {
  /** false: no terminal chat (--no-chat); otherwise there is one when stdin can chat. */
  chat?: boolean;
}

/**
 * `mom up`: NATS (own or given), the runner, the scheduler and the terminal chat in this process,
 * and every other configured adapter's ingress as a child process of its own (restarted with
 * backoff when it exits); logs go to a file.
 */
export async function up(dataDir: string, o: UpOptions = {}): Promise<never> {
  // Runner, scheduler and the terminal chat: only the runner's sandbox.env is needed here.
  const loaded = loadConfig(dataDir, process.env, { sandbox: true });
  // External adapters' ingresses are services of their own (docs/ingress-sdk.md), not mom's to start.
  const ingresses = Object.entries(loaded.config.adapters).filter(([, a]) => a.type !== "cli" && a.type !== "external").map(([name]) => name);
  // Each ingress resolves its own secrets; a missing one is said now, not in a restart loop.
  if (ingresses.length) loadConfig(dataDir, process.env, { adapters: ingresses });
  // The web console too when config.json has a section for it; its login tokens are resolved now.
  const consoleLoaded = configFileHas(loaded, "console") ? loadConfig(dataDir, process.env, { console: true }) : undefined;
  const consoleAt = consoleLoaded && consoleAddress();
  // The runner answers only configured adapters: without a cli adapter, a terminal chat's messages
  // would be dead-lettered unanswered, so there is none, and the start line says why.
  const cliAdapter = cliAdapterName(loaded);
  const chat = o.chat !== false && stdinCanChat() && cliAdapter !== undefined;
  const headlessBecause =
    o.chat === false
      ? "--no-chat"
      : cliAdapter === undefined && stdinCanChat()
        ? `config.json's adapters (${Object.keys(loaded.config.adapters).join(", ")}) have no "cli" one: add "cli": {"type": "cli"} to chat here`
        : "stdin is not a terminal";
  const unlock = await lockDataDir(loaded.paths.dataDir);
  mkdirSync(join(loaded.paths.dataDir, "logs"), { recursive: true });
  const logFile = join(loaded.paths.dataDir, "logs", "mom.log");
  const logFd = openSync(logFile, "a");
  const logger = createLogger("mom", { level: loaded.config.log.level, destination: logFd });
  await observe(loaded, "mom", logger);
  const closers: Closer[] = [unlock];
  let nats: Awaited<ReturnType<typeof startLocalNats>> | undefined;
  let forget = () => {};
  const [{ startRunner }, { startScheduler }, { Sandbox }] = await Promise.all([import("@mom/agent-runner"), import("@mom/scheduler"), import("@mom/sandbox")]);
  let url = explicitNatsUrl(loaded);
  const say = (line: string, fields: Record<string, unknown> = {}) => {
    process.stdout.write(`${line}\n`);
    logger.warn(fields, line.replace(/^mom: /, ""));
  };
  const supervisor = new Supervisor({ say });
  let childrenStopped: Promise<void> | undefined;
  let consoleNote = "";
  // A Ctrl-C (or SIGTERM) while the services start: each step finishes, then what was started is
  // stopped (the nats-server too, which is not in this process group) and nothing is left running.
  // A second one does not wait.
  let interrupted: StopReason | undefined;
  let killNats = () => {};
  const onSignalWhileStarting = (signal: StopReason) => {
    if (interrupted) {
      process.stderr.write("mom: stopping now\n");
      supervisor.kill();
      killNats();
      forget();
      void unlock();
      process.exit(EXIT[interrupted]);
    }
    interrupted = signal;
    process.stderr.write("mom: stopping what has started…\n");
  };
  const startSignals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  const startHandlers = startSignals.map((signal) => [signal, () => onSignalWhileStarting(signal)] as const);
  for (const [signal, handler] of startHandlers) process.on(signal, handler);
  class Interrupted extends Error {}
  const checkInterrupted = () => {
    if (interrupted) throw new Interrupted();
  };
  let ended: Promise<void> | undefined;
  try {
    if (!url) {
      nats = await startLocalNats(loaded.paths.dataDir, { onSpawn: (kill) => (killNats = kill) });
      if (nats.orphanStopped) process.stdout.write(`mom: stopped the nats-server (pid ${nats.orphanStopped}) that a \`mom up\` which did not quit had left running on ${loaded.paths.dataDir}/nats\n`);
      const local = nats;
      closers.push(() => local.stop());
      url = nats.url;
      forget = announceLocalNats(loaded, nats.url);
      closers.push(async () => forget());
    }
    checkInterrupted();
    // The ingresses stop first (at the signal) and are waited for before NATS stops.
    closers.push(() => (childrenStopped ??= supervisor.stop()));
    const runnerLog = serviceLogger(logger, "agent-runner");
    const runner = await startRunner({ loaded, bus: busOptions(loaded, url, "agent-runner", runnerLog), logger: runnerLog });
    closers.push(() => runner.close());
    checkInterrupted();
    // Event files (workspace/events/*.json) fire from the terminal too.
    const schedulerLog = serviceLogger(logger, "scheduler");
    const scheduler = await startScheduler({ loaded, logger: schedulerLog }, busOptions(loaded, url, "scheduler", schedulerLog));
    closers.push(() => scheduler.close());
    checkInterrupted();
    if (consoleLoaded) {
      const consoleLog = serviceLogger(logger, "console");
      const { startConsole } = await import("@mom/console");
      const web = await startConsole({ loaded: consoleLoaded, bus: busOptions(loaded, url, "console", consoleLog), logger: consoleLog, ...consoleAt, sessionSecret: process.env.MOM_CONSOLE_SESSION_SECRET || undefined });
      closers.push(() => web.close());
      consoleNote = `, console ${web.url}${Object.keys(consoleLoaded.config.console.users).length ? "" : " (no console.users: nobody can sign in)"}`;
    }
    // Every other adapter in a process of its own: one platform's crash cannot take the others down.
    const childEnv: NodeJS.ProcessEnv = { ...process.env, NATS_URL: url };
    // Their /healthz and /metrics would all want the port of `mom up`'s: each gets a free one.
    if (process.env.MOM_HTTP_PORT || loaded.config.observability.httpPort !== undefined) childEnv.MOM_HTTP_PORT = "0";
    for (const name of ingresses) supervisor.start({ name: `ingress ${name}`, args: [momBin, "ingress", name, loaded.paths.dataDir], env: childEnv, outputFd: logFd });
    if (chat) {
      const cli = await terminalChat(cliAdapter!, loaded, url, serviceLogger(logger, "ingress-cli"));
      closers.push(() => cli.close());
      ended = cli.ended;
    }
    checkInterrupted();
  } catch (err) {
    await supervisor.stop();
    for (const c of closers.reverse()) await c();
    if (interrupted) {
      logger.info({ reason: interrupted }, "mom up stopped while starting");
      process.exit(EXIT[interrupted]);
    }
    throw err;
  } finally {
    for (const [signal, handler] of startHandlers) process.off(signal, handler);
  }
  // The runner's warning goes to the log file here; a terminal user must see it too.
  const sandbox = new Sandbox(loaded.config.sandbox, loaded.paths).kind;
  const sandboxNote = sandbox === "host" ? "sandbox OFF: tools run on this host as you — install bubblewrap (docs/sandbox.md)" : `sandbox ${sandbox}`;
  const ingressNote = `${ingresses.length ? `, ingress ${ingresses.join(", ")}` : ""}${consoleNote}`;
  process.stdout.write(
    chat
      ? `mom is up (model ${loaded.config.model}, NATS ${redactNatsUrl(url)}${ingressNote}, ${sandboxNote}, logs ${logFile}). Type a message; /help lists the commands ("stop" aborts, /new starts afresh, /model), Ctrl-D quits.\n`
      : `mom is up without a terminal chat (model ${loaded.config.model}, NATS ${redactNatsUrl(url)}${ingressNote}, ${sandboxNote}, logs ${logFile}); ${headlessBecause}. SIGTERM or Ctrl-C stops it.\n`,
  );
  logger.info({ chat, ingresses, nats: redactNatsUrl(url) }, "mom up ready");
  // Does not hold the start up: an unreachable model is said now, not at the first message.
  void checkModelAtStart(loaded, logger, (line) => void process.stdout.write(`mom: ${line}\n`));
  const graceMs = loaded.config.runner.shutdownGraceSeconds * 1000;
  return shutdownWith({
    closers: [...processClosers, ...closers],
    done: ended,
    onStop: (reason: StopReason) => {
      logger.info({ reason }, "mom up stopping");
      childrenStopped ??= supervisor.stop();
      // Ctrl-C means now: the run in progress is cut short (as a hand-over would), not waited for.
      if (reason === "SIGINT") loaded.config.runner.shutdownGraceSeconds = 0;
    },
    deadlineMs: (reason) => (reason === "SIGINT" ? CTRL_C_DEADLINE_MS : graceMs + 10_000),
    force: async () => {
      logger.warn("mom up: services did not stop in time; killing what is left");
      supervisor.kill();
      nats?.kill();
      forget();
      await Promise.race([unlock(), new Promise((r) => setTimeout(r, 500))]);
    },
    say: (line) => void process.stderr.write(`${line}\n`),
  });
}

/**
 * The model's endpoint asked once, in the background, as a service starts (no completion,
 * nothing spent): one line in the log — and in the terminal when `say` is given — naming the
 * endpoint, what failed and the fix. Never holds the start up, never throws.
 */
async function checkModelAtStart(loaded: LoadedConfig, logger: Logger, say?: (line: string) => void): Promise<void> {
  const { startupModelCheck } = await import("./model-probe.js");
  const problem = await startupModelCheck(loaded).catch((err: unknown) => `model check failed: ${(err as Error).message}`);
  if (problem) {
    logger.warn({ model: loaded.config.model }, problem);
    say?.(problem);
  } else {
    logger.info({ model: loaded.config.model }, "model endpoint reachable");
  }
}

/** `mom runner`: the agent runner alone, as deployed; pino logs to stderr. */
export async function runner(dataDir: string): Promise<never> {
  keepSignalsWhileStarting();
  const loaded = loadConfig(dataDir, process.env, { sandbox: true });
  const logger = createLogger("agent-runner", { level: loaded.config.log.level });
  await observe(loaded, "agent-runner", logger);
  const { startRunner } = await import("@mom/agent-runner");
  const service = await startRunner({ loaded, bus: busOptions(loaded, loaded.config.nats.url, "agent-runner", logger), logger });
  void checkModelAtStart(loaded, logger);
  return shutdownOn([() => service.close()]);
}

/** `mom scheduler`: fires workspace/events/*.json onto the bus, as deployed; pino logs to stderr. */
export async function scheduler(dataDir: string): Promise<never> {
  keepSignalsWhileStarting();
  const loaded = loadConfig(dataDir);
  const logger = createLogger("scheduler", { level: loaded.config.log.level });
  await observe(loaded, "scheduler", logger);
  const { startScheduler } = await import("@mom/scheduler");
  const service = await startScheduler({ loaded, logger }, busOptions(loaded, loaded.config.nats.url, "scheduler", logger));
  return shutdownOn([() => service.close()]);
}

/** MOM_CONSOLE_PORT / MOM_CONSOLE_HOST, which win over console.port / console.host. */
function consoleAddress(): { port?: number; host?: string } {
  const raw = process.env.MOM_CONSOLE_PORT?.trim();
  const port = raw ? Number(raw) : undefined;
  if (raw && (!/^\d+$/.test(raw) || port! > 65535)) throw new CommandError(`MOM_CONSOLE_PORT must be a port number 0-65535 (got ${JSON.stringify(raw)})`);
  const host = process.env.MOM_CONSOLE_HOST?.trim() || undefined;
  return { ...(port !== undefined && { port }), ...(host && { host }) };
}

/** Whether config.json itself has this top-level key (not a default filled in); it was validated by loadConfig already. */
function configFileHas(loaded: LoadedConfig, key: string): boolean {
  try {
    const raw = JSON.parse(readFileSync(loaded.paths.configFile, "utf8")) as unknown;
    return typeof raw === "object" && raw !== null && Object.hasOwn(raw, key);
  } catch {
    return false; // no config.json: all defaults
  }
}

/** `mom console`: the web console (docs/console.md), reading NATS only; pino logs to stderr. */
export async function consoleService(dataDir: string): Promise<never> {
  keepSignalsWhileStarting();
  const loaded = loadConfig(dataDir, process.env, { console: true });
  const logger = createLogger("console", { level: loaded.config.log.level });
  await observe(loaded, "console", logger);
  const at = consoleAddress();
  const { startConsole } = await import("@mom/console");
  const service = await startConsole({ loaded, bus: busOptions(loaded, loaded.config.nats.url, "console", logger), logger, ...at, sessionSecret: process.env.MOM_CONSOLE_SESSION_SECRET || undefined });
  process.stderr.write(`mom: console on ${service.url}${Object.keys(loaded.config.console.users).length ? "" : " (no console.users in config.json: nobody can sign in; docs/console.md)"}\n`);
  return shutdownOn([() => service.close()]);
}

/** `mom events`: the event files with their next fire time, and the invalid and missed ones (no NATS needed). */
export async function events(dataDir: string): Promise<string> {
  const { formatEventListing, listEvents } = await import("@mom/scheduler");
  return formatEventListing(listEvents(loadConfig(dataDir)));
}

/** `mom ingress <adapter>`: one ingress service for one configured adapter. */
export async function ingress(adapter: string, dataDir: string): Promise<never> {
  keepSignalsWhileStarting();
  const loaded = loadConfig(dataDir, process.env, { adapters: [adapter] });
  const entry = loaded.config.adapters[adapter];
  if (!entry) {
    const known = Object.keys(loaded.config.adapters);
    throw new Error(`${loaded.paths.configFile}: /adapters/${adapter}: no such adapter (configured: ${known.join(", ") || "none"})`);
  }
  const logger = createLogger(`ingress-${adapter}`, { level: loaded.config.log.level });
  await observe(loaded, `ingress-${adapter}`, logger);
  switch (entry.type) {
    case "cli": {
      const cli = await terminalChat(adapter, loaded, loaded.config.nats.url, logger);
      return shutdownOn([() => cli.close()], cli.ended);
    }
    case "discord": {
      const [{ startConfiguredIngress }, { discordIngress }] = await Promise.all([import("@mom/ingress-sdk"), import("@mom/ingress-discord")]);
      const discord = await startConfiguredIngress(discordIngress, loaded, adapter, logger);
      return shutdownOn([() => discord.close()]);
    }
    case "slack": {
      const [{ startConfiguredIngress }, { slackIngress }] = await Promise.all([import("@mom/ingress-sdk"), import("@mom/ingress-slack")]);
      const slack = await startConfiguredIngress(slackIngress, loaded, adapter, logger);
      return shutdownOn([() => slack.close()]);
    }
    case "telegram": {
      const [{ startConfiguredIngress }, { telegramIngress }] = await Promise.all([import("@mom/ingress-sdk"), import("@mom/ingress-telegram")]);
      const telegram = await startConfiguredIngress(telegramIngress, loaded, adapter, logger);
      return shutdownOn([() => telegram.close()]);
    }
    case "whatsapp": {
      const [{ startConfiguredIngress }, { whatsappIngress }] = await Promise.all([import("@mom/ingress-sdk"), import("@mom/ingress-whatsapp")]);
      const whatsapp = await startConfiguredIngress(whatsappIngress, loaded, adapter, logger);
      return shutdownOn([() => whatsapp.close()]);
    }
    case "external":
      throw new Error(
        `${loaded.paths.configFile}: /adapters/${adapter}: an external ${entry.platform} adapter: its ingress is a service of its own (docs/ingress-sdk.md), not part of mom; deploy and start it there`,
      );
    default:
      throw new Error(`adapter type "${(entry as { type: string }).type}" has no ingress service in this build`);
  }
}
