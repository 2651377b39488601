import { startRunner, type RunningService } from "@mom/agent-runner";
import { Bus } from "@mom/bus";
import { busOptions } from "@mom/bus";
import { createLogger, loadConfig, type LoadedConfig, type SlackAdapterConfig } from "@mom/config";
import { type AdapterAccess, adapterSettings, type RunningIngress, startIngress } from "@mom/ingress-sdk";
import { slackIngress, type SlackSettings } from "@mom/ingress-slack";
import { type FakeLlm, type FakeSlack, type FakeSlackOptions, startFakeLlm, startFakeSlack, startTestNats, type TestNats } from "@mom/testing";
import { rmSync } from "node:fs";
import { writeTestDataDir } from "./data-dir.js";

export const SLACK_ADAPTER = "slack-test";

export interface SlackStack {
  dataDir: string;
  loaded: LoadedConfig;
  nats: TestNats;
  llm: FakeLlm;
  slack: FakeSlack;
  /** A bus connection for the test itself (reading streams). */
  bus: Bus;
  runner?: RunningService;
  ingress?: RunningIngress;
  /** Starts the ingress; `extra` is merged over the adapter's settings (and its `admins`/`dm`). */
  startIngress(extra?: Partial<SlackSettings & AdapterAccess>): Promise<RunningIngress>;
  stopIngress(): Promise<void>;
  /** `<@mom> text` from `user` in `channel` (default alice in #general). */
  mention(text: string, opts?: { channel?: string; user?: string; thread_ts?: string }): { ts: string };
  stop(): Promise<void>;
}

export interface SlackStackOptions {
  /** Adapter entry fields merged over `{type: "slack", botToken, appToken, apiUrl}`. */
  adapter?: Partial<SlackAdapterConfig>;
  /** Merged over the test config.json (top-level keys). */
  config?: object;
  fakeSlack?: FakeSlackOptions;
  /** Settings of the ingress (fast retries by default). */
  ingress?: Partial<SlackSettings>;
  runner?: boolean;
}

/** Real NATS, a fake LLM, a fake Slack, the runner and the Slack ingress, all on loopback. */
export async function startSlackStack(opts: SlackStackOptions = {}): Promise<SlackStack> {
  const nats = await startTestNats();
  const llm = await startFakeLlm();
  const slack = await startFakeSlack(opts.fakeSlack);
  const dataDir = writeTestDataDir("mom-slack-e2e-", nats, llm, {
    adapters: {
      [SLACK_ADAPTER]: { type: "slack", botToken: "env:MOM_TEST_SLACK_BOT", appToken: slack.appToken, apiUrl: slack.apiUrl, ...opts.adapter },
    },
    ...opts.config,
  });
  const loaded = loadConfig(dataDir, { MOM_TEST_SLACK_BOT: slack.botToken }, { adapters: [SLACK_ADAPTER] });
  const logger = createLogger("e2e", { level: "warn" });
  const bus = await Bus.connect(busOptions(loaded, nats.url, "e2e-test", logger));
  await bus.provision();
  const adapter = adapterSettings(slackIngress, loaded, SLACK_ADAPTER);
  const stack: SlackStack = {
    dataDir,
    loaded,
    nats,
    llm,
    slack,
    bus,
    async startIngress(extra = {}) {
      const { admins, dm, ...settings } = extra;
      stack.ingress = await startIngress(slackIngress, {
        adapter: {
          ...adapter,
          access: { ...adapter.access, ...(admins && { admins }), ...(dm !== undefined && { dm }) },
          settings: { ...adapter.settings, retryConfig: { retries: 5, minTimeout: 20, maxTimeout: 100 }, ...opts.ingress, ...settings },
        },
        bus: busOptions(loaded, nats.url, `ingress-${SLACK_ADAPTER}`, logger),
        logger,
        editIntervalMs: 200,
      });
      return stack.ingress;
    },
    async stopIngress() {
      await stack.ingress?.close();
      stack.ingress = undefined;
    },
    mention(text, o = {}) {
      const { ts } = slack.userMessage({ channel: o.channel ?? "C0GENERAL", user: o.user ?? "U0ALICE", text: `<@${slack.botUserId}> ${text}`, ...(o.thread_ts && { thread_ts: o.thread_ts }) });
      return { ts };
    },
    async stop() {
      await stack.ingress?.close();
      await stack.runner?.close();
      await bus.drain();
      await slack.close();
      await llm.close();
      await nats.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  if (opts.runner !== false) stack.runner = await startRunner({ loaded, bus: busOptions(loaded, nats.url, "agent-runner", logger), logger });
  await stack.startIngress();
  return stack;
}
