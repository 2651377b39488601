import "reflect-metadata";
import { parseArgs } from "node:util";
import { type DynamicModule, Module } from "@nestjs/common";
import { type BusOptions, busOptions } from "@mom/bus";
import { BusModule, startJetStreamService } from "@mom/bus/nest";
import { OutboundController, outboundDrawing } from "./outbound-controller.js";
import { createLogger, type LoadedConfig, loadConfig } from "@mom/config";
import { startObservability } from "@mom/observability";
import type { Logger } from "pino";
import { type AdapterSettings, adapterSettings } from "./adapter-settings.js";
import { INGRESS_RUN, IngressShell, type IngressRun } from "./ingress-shell.js";
import type { IngressDefinition } from "./platform.js";

@Module({})
class IngressModule {
  static forRoot(run: IngressRun, bus: BusOptions): DynamicModule {
    return {
      module: IngressModule,
      imports: [BusModule.forRoot(bus)],
      controllers: [OutboundController],
      providers: [{ provide: INGRESS_RUN, useValue: run }, IngressShell, outboundDrawing(IngressShell)],
    };
  }
}

export interface StartIngressOptions {
  /** The adapter as config.json describes it (`adapterSettings`), or given directly (tests). */
  adapter: AdapterSettings<unknown>;
  bus: BusOptions;
  logger: Logger;
  editIntervalMs?: number;
  typingIntervalMs?: number;
  /** The web console's URL (console.publicUrl): each answer with tool activity links to its run page there. */
  consoleUrl?: string;
  /** How long an approval may wait (policy.approvalTimeoutSeconds; default 300 s): how far back a prompt of before a restart is read from the bus. */
  approvalWindowMs?: number;
}

export interface RunningIngress {
  shell: IngressShell;
  close(): Promise<void>;
}

/**
 * Connects to NATS and to the platform, draws this adapter's runs and starts receiving; resolves
 * once all of it is up, or rejects saying which part failed (and leaves nothing running).
 */
export async function startIngress(definition: IngressDefinition, o: StartIngressOptions): Promise<RunningIngress> {
  const run: IngressRun = { definition, adapter: o.adapter, logger: o.logger, ...(o.editIntervalMs !== undefined && { editIntervalMs: o.editIntervalMs }), ...(o.typingIntervalMs !== undefined && { typingIntervalMs: o.typingIntervalMs }), ...(o.consoleUrl && { consoleUrl: o.consoleUrl }), ...(o.approvalWindowMs !== undefined && { approvalWindowMs: o.approvalWindowMs }) };
  const app = await startJetStreamService(IngressModule.forRoot(run, o.bus));
  return { shell: app.get(IngressShell), close: () => app.close() };
}

/** `startIngress` for adapter `name` of a loaded config.json. */
export function startConfiguredIngress(definition: IngressDefinition, loaded: LoadedConfig, name: string, logger: Logger, natsUrl = loaded.config.nats.url): Promise<RunningIngress> {
  const consoleUrl = loaded.config.console.publicUrl;
  const approvalWindowMs = loaded.config.policy.approvalTimeoutSeconds * 1000;
  return startIngress(definition, { adapter: adapterSettings(definition, loaded, name), bus: busOptions(loaded, natsUrl, `ingress-${name}`, logger), logger, approvalWindowMs, ...(consoleUrl && { consoleUrl }) });
}

const USAGE = "usage: <ingress> --adapter <name> [--data-dir <dir>]   (or MOM_ADAPTER, MOM_DATA_DIR; NATS_URL overrides nats.url)";

/**
 * The main of an ingress deployed on its own: reads config.json of the data directory, serves
 * /healthz and /metrics, runs until SIGTERM or SIGINT and then stops in order (receiving, the
 * messages in hand, drawing). A bad argument or config exits 2 with the reason; a platform or NATS
 * that cannot be reached at start exits 1 with it.
 */
export async function runIngress(definition: IngressDefinition, argv: string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): Promise<void> {
  let adapter: string | undefined;
  let dataDir: string;
  let loaded: LoadedConfig;
  try {
    const { values } = parseArgs({ args: argv, options: { adapter: { type: "string" }, "data-dir": { type: "string" } }, strict: true });
    adapter = values.adapter ?? env.MOM_ADAPTER;
    dataDir = values["data-dir"] ?? env.MOM_DATA_DIR ?? "./data";
    if (!adapter) throw new Error(`no adapter named\n${USAGE}`);
    loaded = loadConfig(dataDir, env);
    adapterSettings(definition, loaded, adapter, env);
  } catch (err) {
    process.stderr.write(`${definition.platform} ingress: ${(err as Error).message}\n`);
    process.exitCode = 2;
    return;
  }
  const logger = createLogger(`ingress-${adapter}`, { level: loaded.config.log.level });
  let stopping = false;
  let close: (() => void) | undefined;
  // Listened for from the start: a SIGTERM while the ingress starts (a rollout) stops it once it is
  // up, instead of Node's default action killing it mid-start with nothing closed.
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1); // a second signal: stop waiting
    stopping = true;
    logger.info({ signal }, "stopping");
    close?.();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  try {
    const obs = await startObservability({ serviceName: `ingress-${adapter}`, httpPort: loaded.config.observability.httpPort, logger });
    const running = await startConfiguredIngress(definition, loaded, adapter, logger);
    close = () =>
      void running
        .close()
        .then(() => obs.close())
        .then(
          () => process.exit(0),
          (err: unknown) => (logger.error({ err }, "shutdown failed"), process.exit(1)),
        );
    if (stopping) close();
  } catch (err) {
    logger.fatal({ err }, `ingress-${adapter} could not start: ${(err as Error).message}`);
    process.stderr.write(`${definition.platform} ingress: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
