import { startRunner, type RunningService } from "@mom/agent-runner";
import { Bus } from "@mom/bus";
import { busOptions } from "@mom/bus";
import { createLogger, loadConfig, type LoadedConfig } from "@mom/config";
import { chatModels, startCliIngress, type RunningCliIngress } from "@mom/ingress-cli";
import { startFakeLlm, startTestNats, type FakeLlm, type TestNats } from "@mom/testing";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { OutputCapture } from "./output-capture.js";
import { writeTestDataDir } from "./data-dir.js";

export interface Stack {
  dataDir: string;
  loaded: LoadedConfig;
  nats: TestNats;
  llm: FakeLlm;
  /** A bus connection for the test itself (publishing raw payloads, reading streams). */
  bus: Bus;
  runner?: RunningService;
  cli?: RunningCliIngress;
  input: PassThrough;
  output: OutputCapture;
  /** Every warn-or-worse log line of the services in this process, parsed (also written to stderr). */
  logs: Array<Record<string, unknown>>;
  type(line: string): void;
  startRunner(): Promise<void>;
  stop(): Promise<void>;
}

/** Real NATS, a fake OpenAI-compatible LLM, the runner and the CLI ingress, all on loopback. */
export interface StackOptions {
  runner?: boolean;
  cli?: boolean;
  /** Merged over the test config.json (top-level keys). */
  config?: object;
  /** Rewrites the fake provider's models.json (extra models, costs, context windows). */
  models?: (json: { providers: Record<string, { models: Array<Record<string, unknown>> }> }) => object;
  /**
   * The terminal chat as on a terminal: input and output claim to be TTYs (80 columns), so the
   * chat reads keystrokes in raw mode and keeps the input line apart from mom's output.
   */
  tty?: boolean;
}

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const nats = await startTestNats();
  const llm = await startFakeLlm();
  const models = llm.modelsJson() as Parameters<NonNullable<StackOptions["models"]>>[0];
  const dataDir = writeTestDataDir("mom-e2e-", nats, llm, opts.config, opts.models ? opts.models(models) : models);
  const loaded = loadConfig(dataDir, {});
  const logs: Array<Record<string, unknown>> = [];
  const logger = createLogger("e2e", {
    level: "warn",
    destination: {
      write: (line: string) => {
        logs.push(JSON.parse(line) as Record<string, unknown>);
        return process.stderr.write(line);
      },
    } as NodeJS.WritableStream,
  });
  const bus = await Bus.connect(busOptions(loaded, nats.url, "e2e-test", logger));
  await bus.provision();
  const input = new PassThrough();
  if (opts.tty) {
    const tty = input as PassThrough & { isTTY?: boolean; isRaw?: boolean; setRawMode?: (raw: boolean) => PassThrough };
    tty.isTTY = true;
    tty.isRaw = false;
    tty.setRawMode = (raw) => ((tty.isRaw = raw), input);
  }
  const output = new OutputCapture();
  const stack: Stack = {
    dataDir,
    loaded,
    nats,
    llm,
    bus,
    input,
    output,
    logs,
    // A terminal sends Enter as "\r" (raw mode); a pipe sends lines.
    type: (line) => void input.write(`${line}${opts.tty ? "\r" : "\n"}`),
    async startRunner() {
      stack.runner = await startRunner({ loaded, bus: busOptions(loaded, nats.url, "agent-runner", logger), logger });
    },
    async stop() {
      await stack.cli?.close();
      await stack.runner?.close();
      await bus.drain();
      await llm.close();
      await nats.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  if (opts.runner !== false) await stack.startRunner();
  if (opts.cli !== false) {
    stack.cli = await startCliIngress(
      {
        adapter: "cli",
        channelId: "local",
        user: { id: "u-tester", username: "tester" },
        input,
        output: { write: output.write, ...(opts.tty && { isTTY: true, columns: 80 }) },
        models: chatModels(loaded, "cli/local"),
        logger,
        // `/attach <path>` is relative to the data dir; files mom attaches land in <dataDir>/downloads.
        cwd: dataDir,
        downloadsDir: join(dataDir, "downloads"),
        maxAttachmentBytes: loaded.config.attachments.maxBytes,
      },
      busOptions(loaded, nats.url, "ingress-cli", logger),
    );
  }
  return stack;
}
