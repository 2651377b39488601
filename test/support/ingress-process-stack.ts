// An ingress as deployed (`mom ingress <adapter>`, its own process, see ingress-process.ts) in
// front of the runner, on a nats-server of the test's own (so `nats.restart` can take NATS away
// under the ingress) and the fake model answering what it is asked (answer-back.ts): what the tests
// of a webhook post answered only once its message is stored share (test/e2e/telegram-webhook-ack
// and test/e2e/whatsapp-ack). The platform's fake server is the test's: it starts and closes it.
import { startRunner, type RunningService } from "@mom/agent-runner";
import { Bus, busOptions } from "@mom/bus";
import { createLogger, loadConfig } from "@mom/config";
import { type FakeLlm, spawnNatsServer, startFakeLlm, type TestNats } from "@mom/testing";
import { rmSync } from "node:fs";
import { answerBack } from "./answer-back.js";
import { writeTestDataDir } from "./data-dir.js";
import { inboundMessages } from "./inbound.js";
import { ingressProcess, momBin } from "./ingress-process.js";

export interface IngressProcessStack {
  nats: TestNats;
  llm: FakeLlm;
  dataDir: string;
  /** The test's own connection. */
  bus: Bus;
  runner: RunningService;
  ingress: ReturnType<typeof ingressProcess>;
  /** How many copies of message `id` of channel `channelId` are on the inbound stream. */
  stored(channelId: string, id: string): Promise<number>;
  stop(): Promise<void>;
}

export interface IngressProcessStackOptions {
  /** The adapter's name in config.json, as in `mom ingress <adapter>`. */
  adapter: string;
  /** Its entry in config.json. */
  settings: object;
  /** The variables the settings name (`env:…`), for the runner and the ingress process. */
  env: Record<string, string>;
  /** What the ingress logs once it receives. */
  ready: string;
  /** config.json `nats.streams` (e.g. a duplicate window short enough to outwait). */
  streams?: object;
}

export async function startIngressProcessStack(o: IngressProcessStackOptions): Promise<IngressProcessStack> {
  // Undone last first, by stop() or by a start that fails half-way (no nats-server left behind).
  const undo: Array<() => unknown> = [];
  const stop = async () => {
    const errors: unknown[] = [];
    for (const u of undo.splice(0).reverse()) await Promise.resolve().then(u).catch((err: unknown) => errors.push(err));
    if (errors.length > 0) throw errors[0];
  };
  try {
    const nats = await spawnNatsServer();
    undo.push(() => nats.stop());
    const llm = await startFakeLlm();
    undo.push(() => llm.close());
    llm.setFallback(answerBack);
    const dataDir = writeTestDataDir(`mom-e2e-ingress-${o.adapter}-`, nats, llm, {
      adapters: { [o.adapter]: o.settings },
      // The ingress says it is ready at info.
      log: { level: "info" },
      ...(o.streams && { nats: { url: nats.url, namespace: nats.namespace, streams: o.streams } }),
    });
    undo.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const loaded = loadConfig(dataDir, o.env, { adapters: [o.adapter] });
    const logger = createLogger(`e2e-ingress-${o.adapter}`, { level: "warn" });
    const bus = await Bus.connect(busOptions(loaded, nats.url, "e2e-test", logger));
    undo.push(() => bus.drain());
    await bus.provision();
    const runner = await startRunner({ loaded, bus: busOptions(loaded, nats.url, "agent-runner", logger), logger });
    undo.push(() => runner.close());
    // NATS_URL emptied: the process takes the test's server from config.json, not one from the environment.
    const ingress = ingressProcess({ args: () => [momBin, "ingress", o.adapter, dataDir], env: () => ({ ...o.env, NATS_URL: "" }), ready: o.ready });
    undo.push(() => ingress.kill!());
    await ingress.start();
    return {
      nats,
      llm,
      dataDir,
      bus,
      runner,
      ingress,
      stored: async (channelId, id) => (await inboundMessages(bus)).filter((m) => m.channelId === channelId && m.id === id).length,
      stop,
    };
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
}
