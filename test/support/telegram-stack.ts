import { startRunner, type RunningService } from "@mom/agent-runner";
import { Bus } from "@mom/bus";
import { busOptions } from "@mom/bus";
import { createLogger, loadConfig, type LoadedConfig } from "@mom/config";
import { adapterSettings, type RunningIngress, startIngress } from "@mom/ingress-sdk";
import { chatModels, type RunningCliIngress, startCliIngress } from "@mom/ingress-cli";
import { telegramIngress, type TelegramSettings } from "@mom/ingress-telegram";
import { type FakeLlm, type FakeTelegram, startFakeLlm, startFakeTelegram, startTestNats, type TestNats, type TgChat, type TgUser } from "@mom/testing";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { writeTestDataDir } from "./data-dir.js";
import { OutputCapture } from "./output-capture.js";

export const TG_ADAPTER = "telegram";

export const TG = {
  ana: { id: 1001, is_bot: false, first_name: "Ana", last_name: "Lopez", username: "ana" } as TgUser,
  bob: { id: 1002, is_bot: false, first_name: "Bob", username: "bob" } as TgUser,
  carol: { id: 1003, is_bot: false, first_name: "Carol", username: "carol" } as TgUser,
  team: { id: -100200, type: "supergroup", title: "team" } as TgChat,
  forum: { id: -100300, type: "supergroup", title: "forum", is_forum: true } as TgChat,
  dm: (u: TgUser): TgChat => ({ id: u.id, type: "private", first_name: u.first_name, ...(u.username && { username: u.username }) }),
};

export interface TelegramStack {
  dataDir: string;
  loaded: LoadedConfig;
  nats: TestNats;
  llm: FakeLlm;
  telegram: FakeTelegram;
  bus: Bus;
  runner: RunningService;
  ingress: RunningIngress;
  /** Stops the Telegram ingress and starts it again (`ingress` is then the new one). */
  restartIngress(): Promise<void>;
  /** The terminal chat cli/local (adapter "cli"), when started with `terminal: true`. */
  terminal?: { cli: RunningCliIngress; output: OutputCapture; type(line: string): void };
  stop(): Promise<void>;
}

/** Real NATS, the fake LLM, the fake Bot API, the runner and the Telegram ingress (unmodified grammY), all on loopback. */
export async function startTelegramStack(opts: { adapter?: object; config?: object; ingress?: Partial<TelegramSettings>; terminal?: boolean } = {}): Promise<TelegramStack> {
  const nats = await startTestNats();
  const llm = await startFakeLlm();
  const telegram = await startFakeTelegram();
  const dataDir = writeTestDataDir("mom-e2e-telegram-", nats, llm, {
    adapters: { [TG_ADAPTER]: { type: "telegram", botToken: "env:MOM_TEST_TELEGRAM_TOKEN", apiUrl: telegram.url, ...opts.adapter }, ...(opts.terminal && { cli: { type: "cli" } }) },
    ...opts.config,
  });
  const loaded = loadConfig(dataDir, { MOM_TEST_TELEGRAM_TOKEN: telegram.token }, { adapters: [TG_ADAPTER] });
  const logger = createLogger("e2e-telegram", { level: "warn" });
  const bus = await Bus.connect(busOptions(loaded, nats.url, "e2e-test", logger));
  await bus.provision();
  const runner = await startRunner({ loaded, bus: busOptions(loaded, nats.url, "agent-runner", logger), logger });
  const adapter = adapterSettings(telegramIngress, loaded, TG_ADAPTER);
  const startTelegram = () =>
    startIngress(telegramIngress, {
      adapter: { ...adapter, settings: { ...adapter.settings, pollTimeoutSeconds: 2, ...opts.ingress } },
      bus: busOptions(loaded, nats.url, `ingress-${TG_ADAPTER}`, logger),
      logger,
      editIntervalMs: 100,
      typingIntervalMs: 300,
    });
  let ingress = await startTelegram();
  let terminal: TelegramStack["terminal"];
  if (opts.terminal) {
    const input = new PassThrough();
    const output = new OutputCapture();
    const cli = await startCliIngress(
      {
        adapter: "cli",
        channelId: "local",
        user: { id: "u-tester", username: "tester" },
        input,
        output: { write: output.write },
        models: chatModels(loaded, "cli/local"),
        logger,
        cwd: dataDir,
        downloadsDir: join(dataDir, "downloads"),
        maxAttachmentBytes: loaded.config.attachments.maxBytes,
      },
      busOptions(loaded, nats.url, "ingress-cli", logger),
    );
    terminal = { cli, output, type: (line) => void input.write(`${line}\n`) };
  }
  return {
    dataDir,
    loaded,
    nats,
    llm,
    telegram,
    bus,
    runner,
    get ingress() {
      return ingress;
    },
    async restartIngress() {
      await ingress.close();
      ingress = await startTelegram();
    },
    ...(terminal && { terminal }),
    async stop() {
      await terminal?.cli.close();
      await ingress.close();
      await runner.close();
      await bus.drain();
      await telegram.close();
      await llm.close();
      await nats.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
