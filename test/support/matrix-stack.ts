import { jest } from "@jest/globals";
import { startRunner, type RunningService } from "@mom/agent-runner";
import { Bus, busOptions } from "@mom/bus";
import { createLogger, loadConfig, type LoadedConfig } from "@mom/config";
import { adapterSettings, type RunningIngress, startIngress } from "@mom/ingress-sdk";
import { matrixIngress, type MatrixSettings } from "@mom/ingress-matrix";
import { type FakeLlm, type FakeMatrix, type FakeMatrixOptions, startFakeLlm, startFakeMatrix, startTestNats, type TestNats } from "@mom/testing";
import { rmSync } from "node:fs";
import { writeTestDataDir } from "./data-dir.js";

// Jest loads modules through its own registry, which Node's module hooks do not reach, so the
// ingress's stand-in for the absent native crypto engine (services/ingress-matrix/src/matrix-sdk.ts)
// is given here the way Jest replaces a module. The ingress never uses it: encrypted rooms are
// refused. test/e2e/matrix-process.test.ts runs the ingress under plain Node, with the stand-in.
jest.mock("@matrix-org/matrix-sdk-crypto-nodejs", () => ({}));

export const MX_ADAPTER = "matrix-home";

export interface MatrixStack {
  dataDir: string;
  loaded: LoadedConfig;
  nats: TestNats;
  llm: FakeLlm;
  matrix: FakeMatrix;
  bus: Bus;
  runner: RunningService;
  ingress: RunningIngress;
  /** Stops the ingress alone (the homeserver, NATS and the runner go on). */
  stopIngress(): Promise<void>;
  /** Starts it again on the same settings (and store). */
  startIngress(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Real NATS, the fake LLM, the fake homeserver, the runner and the Matrix ingress (unmodified
 * matrix-bot-sdk) on loopback; the adapter is declared as config.json declares it, `external`.
 */
export async function startMatrixStack(opts: { adapter?: object; config?: object; settings?: Partial<MatrixSettings>; homeserver?: FakeMatrixOptions; before?: (m: FakeMatrix) => void } = {}): Promise<MatrixStack> {
  const nats = await startTestNats();
  const llm = await startFakeLlm();
  const matrix = await startFakeMatrix(opts.homeserver);
  opts.before?.(matrix);
  const dataDir = writeTestDataDir("mom-e2e-matrix-", nats, llm, {
    adapters: { [MX_ADAPTER]: { type: "external", platform: "matrix", settings: { homeserverUrl: matrix.url, accessToken: "env:MOM_TEST_MATRIX_TOKEN", ...opts.settings }, ...opts.adapter } },
    ...opts.config,
  });
  const env = { MOM_TEST_MATRIX_TOKEN: matrix.accessToken };
  const loaded = loadConfig(dataDir, env, { adapters: [MX_ADAPTER] });
  const logger = createLogger("e2e-matrix", { level: "warn" });
  const bus = await Bus.connect(busOptions(loaded, nats.url, "e2e-test", logger));
  await bus.provision();
  const runner = await startRunner({ loaded, bus: busOptions(loaded, nats.url, "agent-runner", logger), logger });
  const start = () =>
    startIngress(matrixIngress, {
      adapter: adapterSettings(matrixIngress, loaded, MX_ADAPTER, env),
      bus: busOptions(loaded, nats.url, `ingress-${MX_ADAPTER}`, logger),
      logger,
      editIntervalMs: 100,
      typingIntervalMs: 300,
    });
  let running: RunningIngress | undefined = await start();
  return {
    dataDir,
    loaded,
    nats,
    llm,
    matrix,
    bus,
    runner,
    get ingress() {
      if (!running) throw new Error("the ingress is stopped");
      return running;
    },
    async stopIngress() {
      await running?.close();
      running = undefined;
    },
    async startIngress() {
      running ??= await start();
    },
    async stop() {
      await running?.close();
      await runner.close();
      await bus.drain();
      await matrix.close();
      await llm.close();
      await nats.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
