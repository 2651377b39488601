import { type LoadedConfig, createLogger, loadConfig, redactNatsUrl } from "@mom/config";
import { mkdirSync, openSync } from "node:fs";
import type { Logger } from "pino";
import { userInfo } from "node:os";
import { join } from "node:path";
import { startObservability } from "@mom/observability";
import { busOptions } from "./bus-options.js";
import { CommandError } from "./command-error.js";
import { lockDataDir } from "./data-lock.js";
import { startLocalNats } from "./local-nats.js";
import { announceLocalNats, explicitNatsUrl } from "./nats-target.js";

import { type Closer, type StopReason, shutdownOn as shutdownWith } from "./shutdown.js";

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

function cliAdapterName(loaded: LoadedConfig): string {
  const entry = Object.entries(loaded.config.adapters).find(([, a]) => a.type === "cli");
  return entry?.[0] ?? "cli";
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
  const { startCliIngress } = await import("@mom/ingress-cli");
  const me = currentUser();
  let inputEnded!: () => void;
  const ended = new Promise<void>((r) => (inputEnded = r));
  const cli = await startCliIngress(
    {
      adapter,
      channelId: process.env.MOM_CLI_CHANNEL || "local",
      user: { id: me, username: me },
      input: process.stdin,
      output: { write: (t) => void process.stdout.write(t), isTTY: process.stdout.isTTY },
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

/** `mom up`: NATS (own or given), runner and terminal chat in one process; logs go to a file. */
export async function up(dataDir: string): Promise<never> {
  // Runner, scheduler and the terminal chat: only the runner's sandbox.env is needed.
  const loaded = loadConfig(dataDir, process.env, { sandbox: true });
  const unlock = await lockDataDir(loaded.paths.dataDir);
  mkdirSync(join(loaded.paths.dataDir, "logs"), { recursive: true });
  const logFile = join(loaded.paths.dataDir, "logs", "mom.log");
  const logger = createLogger("mom", { level: loaded.config.log.level, destination: openSync(logFile, "a") });
  await observe(loaded, "mom", logger);
  const closers: Closer[] = [unlock];
  let nats: Awaited<ReturnType<typeof startLocalNats>> | undefined;
  let forget = () => {};
  const [{ startRunner }, { startScheduler }, { Sandbox }] = await Promise.all([import("@mom/agent-runner"), import("@mom/scheduler"), import("@mom/sandbox")]);
  let url = explicitNatsUrl(loaded);
  try {
    if (!url) {
      nats = await startLocalNats(loaded.paths.dataDir);
      if (nats.orphanStopped) process.stdout.write(`mom: stopped the nats-server (pid ${nats.orphanStopped}) that a \`mom up\` which did not quit had left running on ${loaded.paths.dataDir}/nats\n`);
      const local = nats;
      closers.push(() => local.stop());
      url = nats.url;
      forget = announceLocalNats(loaded, nats.url);
      closers.push(async () => forget());
    }
    const runner = await startRunner({ loaded, bus: busOptions(loaded, url, "agent-runner", logger.child({ service: "agent-runner" })), logger: logger.child({ service: "agent-runner" }) });
    closers.push(() => runner.close());
    // Event files (workspace/events/*.json) fire from the terminal too.
    const schedulerLog = logger.child({ service: "scheduler" });
    const scheduler = await startScheduler({ loaded, logger: schedulerLog }, busOptions(loaded, url, "scheduler", schedulerLog));
    closers.push(() => scheduler.close());
  } catch (err) {
    for (const c of closers.reverse()) await c();
    throw err;
  }
  const cli = await terminalChat(cliAdapterName(loaded), loaded, url, logger.child({ service: "ingress-cli" }));
  closers.push(() => cli.close());
  // The runner's warning goes to the log file here; a terminal user must see it too.
  const sandbox = new Sandbox(loaded.config.sandbox, loaded.paths).kind;
  const sandboxNote = sandbox === "host" ? "sandbox OFF: tools run on this host as you — install bubblewrap (docs/sandbox.md)" : `sandbox ${sandbox}`;
  process.stdout.write(`mom is up (model ${loaded.config.model}, NATS ${redactNatsUrl(url)}, ${sandboxNote}, logs ${logFile}). Type a message; /attach <file> [text] sends a file, "stop" aborts, Ctrl-D quits.\n`);
  const graceMs = loaded.config.runner.shutdownGraceSeconds * 1000;
  return shutdownWith({
    closers: [...processClosers, ...closers],
    done: cli.ended,
    onStop: (reason: StopReason) => {
      logger.info({ reason }, "mom up stopping");
      // Ctrl-C means now: the run in progress is cut short (as a hand-over would), not waited for.
      if (reason === "SIGINT") loaded.config.runner.shutdownGraceSeconds = 0;
    },
    deadlineMs: (reason) => (reason === "SIGINT" ? CTRL_C_DEADLINE_MS : graceMs + 10_000),
    force: async () => {
      logger.warn("mom up: services did not stop in time; killing what is left");
      nats?.kill();
      forget();
      await Promise.race([unlock(), new Promise((r) => setTimeout(r, 500))]);
    },
    say: (line) => void process.stderr.write(`${line}\n`),
  });
}

/** `mom runner`: the agent runner alone, as deployed; pino logs to stderr. */
export async function runner(dataDir: string): Promise<never> {
  const loaded = loadConfig(dataDir, process.env, { sandbox: true });
  const logger = createLogger("agent-runner", { level: loaded.config.log.level });
  await observe(loaded, "agent-runner", logger);
  const { startRunner } = await import("@mom/agent-runner");
  const service = await startRunner({ loaded, bus: busOptions(loaded, loaded.config.nats.url, "agent-runner", logger), logger });
  return shutdownOn([() => service.close()]);
}

/** `mom scheduler`: fires workspace/events/*.json onto the bus, as deployed; pino logs to stderr. */
export async function scheduler(dataDir: string): Promise<never> {
  const loaded = loadConfig(dataDir);
  const logger = createLogger("scheduler", { level: loaded.config.log.level });
  await observe(loaded, "scheduler", logger);
  const { startScheduler } = await import("@mom/scheduler");
  const service = await startScheduler({ loaded, logger }, busOptions(loaded, loaded.config.nats.url, "scheduler", logger));
  return shutdownOn([() => service.close()]);
}

/** `mom events`: the event files with their next fire time, and the invalid and missed ones (no NATS needed). */
export async function events(dataDir: string): Promise<string> {
  const { formatEventListing, listEvents } = await import("@mom/scheduler");
  return formatEventListing(listEvents(loadConfig(dataDir)));
}

/** `mom ingress <adapter>`: one ingress service for one configured adapter. */
export async function ingress(adapter: string, dataDir: string): Promise<never> {
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
      const { discordOptionsFromConfig, startDiscordIngress } = await import("@mom/ingress-discord");
      const discord = await startDiscordIngress(discordOptionsFromConfig(adapter, loaded, logger), busOptions(loaded, loaded.config.nats.url, `ingress-${adapter}`, logger));
      return shutdownOn([() => discord.close()]);
    }
    case "slack": {
      const { slackOptionsFromConfig, startSlackIngress } = await import("@mom/ingress-slack");
      const slack = await startSlackIngress(slackOptionsFromConfig(adapter, loaded, logger), busOptions(loaded, loaded.config.nats.url, `ingress-${adapter}`, logger));
      return shutdownOn([() => slack.close()]);
    }
    case "telegram": {
      const { startTelegramIngress, telegramOptionsFromConfig } = await import("@mom/ingress-telegram");
      const telegram = await startTelegramIngress(telegramOptionsFromConfig(adapter, loaded, logger), busOptions(loaded, loaded.config.nats.url, `ingress-${adapter}`, logger));
      return shutdownOn([() => telegram.close()]);
    }
    case "whatsapp": {
      const { startWhatsAppIngress, whatsappOptionsFromConfig } = await import("@mom/ingress-whatsapp");
      const whatsapp = await startWhatsAppIngress(whatsappOptionsFromConfig(adapter, loaded, logger), busOptions(loaded, loaded.config.nats.url, `ingress-${adapter}`, logger));
      return shutdownOn([() => whatsapp.close()]);
    }
    default:
      throw new Error(`adapter type "${(entry as { type: string }).type}" has no ingress service in this build`);
  }
}
