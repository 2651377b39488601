import { startRunner, type RunningService } from "@mom/agent-runner";
import { Bus } from "@mom/bus";
import { busOptions } from "@mom/bus";
import { createLogger, loadConfig, type LoadedConfig } from "@mom/config";
import { adapterSettings, type PlatformConnection, type RunningIngress, startIngress } from "@mom/ingress-sdk";
import { whatsappIngress } from "@mom/ingress-whatsapp";
import { type FakeLlm, type FakeWhatsApp, startFakeLlm, startFakeWhatsApp, startTestNats, type TestNats } from "@mom/testing";
import { rmSync } from "node:fs";
import { PassThrough } from "node:stream";
import { writeTestDataDir } from "./data-dir.js";
import { OutputCapture } from "./output-capture.js";

export const WA_ADAPTER = "whatsapp";

export const WA = {
  ana: { waId: "4917000000001", name: "Ana Lopez" },
  bob: { waId: "4917000000002", name: "Bob" },
  carol: { waId: "4917000000003", name: "Carol" },
  dave: { waId: "4917000000004", name: "Dave" },
};

export interface WhatsAppStack {
  dataDir: string;
  loaded: LoadedConfig;
  nats: TestNats;
  llm: FakeLlm;
  whatsapp: FakeWhatsApp;
  bus: Bus;
  runner: RunningService;
  ingress: RunningIngress;
  /** What the services logged at warn and above. */
  logs: OutputCapture;
  stop(): Promise<void>;
}

/** Real NATS, the fake LLM, the fake Cloud API (Graph + signed webhook posts), the runner and the WhatsApp ingress, all on loopback. */
export async function startWhatsAppStack(opts: { adapter?: object; config?: object } = {}): Promise<WhatsAppStack> {
  const nats = await startTestNats();
  const llm = await startFakeLlm();
  const whatsapp = await startFakeWhatsApp();
  const dataDir = writeTestDataDir("mom-e2e-whatsapp-", nats, llm, {
    adapters: {
      [WA_ADAPTER]: {
        type: "whatsapp",
        accessToken: "env:MOM_TEST_WA_TOKEN",
        appSecret: "env:MOM_TEST_WA_SECRET",
        verifyToken: whatsapp.verifyToken,
        phoneNumberId: whatsapp.phoneNumberId,
        apiUrl: whatsapp.url,
        ...opts.adapter,
      },
    },
    ...opts.config,
  });
  const loaded = loadConfig(dataDir, { MOM_TEST_WA_TOKEN: whatsapp.accessToken, MOM_TEST_WA_SECRET: whatsapp.appSecret }, { adapters: [WA_ADAPTER] });
  // The services' warnings and errors, kept for the test to read (and still shown on stderr).
  const logs = new OutputCapture();
  const logStream = new PassThrough().on("data", (chunk: Buffer) => {
    logs.write(chunk.toString("utf8"));
    process.stderr.write(chunk);
  });
  const logger = createLogger("e2e-whatsapp", { level: "warn", destination: logStream });
  const bus = await Bus.connect(busOptions(loaded, nats.url, "e2e-test", logger));
  await bus.provision();
  const runner = await startRunner({ loaded, bus: busOptions(loaded, nats.url, "agent-runner", logger), logger });
  const adapter = adapterSettings(whatsappIngress, loaded, WA_ADAPTER);
  const ingress = await startIngress(whatsappIngress, {
    adapter: { ...adapter, settings: { ...adapter.settings, webhookPort: 0, webhookHost: "127.0.0.1", rateLimitRetryMs: 20_000 } },
    bus: busOptions(loaded, nats.url, `ingress-${WA_ADAPTER}`, logger),
    logger,
  });
  whatsapp.webhookUrl = `http://127.0.0.1:${(ingress.shell.platform as PlatformConnection & { port: number }).port}/webhook`;
  return {
    dataDir,
    loaded,
    nats,
    llm,
    whatsapp,
    bus,
    runner,
    ingress,
    logs,
    async stop() {
      await ingress.close();
      await runner.close();
      await bus.drain();
      await whatsapp.close();
      await llm.close();
      await nats.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
