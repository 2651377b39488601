import { startRunner, type RunningService } from "@mom/agent-runner";
import { Bus, busOptions } from "@mom/bus";
import { createLogger, loadConfig, type LoadedConfig } from "@mom/config";
import { emailIngress, type EmailSettings } from "@mom/ingress-email";
import { adapterSettings, type RunningIngress, startIngress } from "@mom/ingress-sdk";
import { type FakeLlm, type MailServers, startFakeLlm, startMailServers, startTestNats, type TestNats } from "@mom/testing";
import { rmSync } from "node:fs";
import type { Logger } from "pino";
import { writeTestDataDir } from "./data-dir.js";

export const EMAIL_ADAPTER = "email";

/** The people of the e-mail tests: mom's mailbox, allowed senders (carol decides approvals, dan may not write), a stranger's domain, one that bounces. */
export const MAIL = {
  mom: "mom@mom.test",
  ana: "ana@example.test",
  bob: "bob@example.test",
  carol: "carol@example.test",
  dan: "dan@example.test",
  eve: "eve@elsewhere.test",
  ghost: "ghost@gone.test",
};
const PASSWORD = "mom-test-secret";

export interface EmailStack {
  dataDir: string;
  loaded: LoadedConfig;
  nats: TestNats;
  llm: FakeLlm;
  mail: MailServers;
  bus: Bus;
  runner: RunningService;
  ingress?: RunningIngress;
  /** Every log line of the ingress (info and up), parsed. */
  logs: Array<Record<string, unknown> & { msg: string }>;
  startIngress(): Promise<RunningIngress>;
  stopIngress(): Promise<void>;
  /** The mails mom sent that reached `address`, oldest first, parsed. */
  received(address: string): ReturnType<MailServers["messages"]>;
  stop(): Promise<void>;
}

/** Real NATS, the fake LLM, real dovecot + postfix, the runner and the e-mail ingress, all on loopback. */
export async function startEmailStack(opts: { adapter?: object; config?: object; settings?: Partial<EmailSettings> } = {}): Promise<EmailStack> {
  const nats = await startTestNats();
  const llm = await startFakeLlm();
  const mail = await startMailServers({
    users: Object.fromEntries([MAIL.mom, MAIL.ana, MAIL.bob, MAIL.carol, MAIL.dan, MAIL.eve].map((a) => [a, a === MAIL.mom ? PASSWORD : "pw"])),
    bouncingDomains: ["gone.test"],
  });
  const settings: EmailSettings = {
    address: MAIL.mom,
    password: "env:MOM_TEST_EMAIL_PASSWORD",
    imapHost: mail.host,
    imapPort: mail.imapPort,
    imapTls: false,
    smtpHost: mail.host,
    smtpPort: mail.smtpPort,
    allowFrom: ["@example.test", MAIL.ghost],
    ...opts.settings,
  };
  const dataDir = writeTestDataDir("mom-e2e-email-", nats, llm, {
    adapters: { [EMAIL_ADAPTER]: { type: "external", platform: "email", settings, ...opts.adapter } },
    ...opts.config,
  });
  const env = { MOM_TEST_EMAIL_PASSWORD: PASSWORD };
  const loaded = loadConfig(dataDir, env);
  const logger = createLogger("e2e-email", { level: "warn" });
  const logs: EmailStack["logs"] = [];
  const ingressLogger: Logger = createLogger("ingress-email", {
    level: "info",
    destination: { write: (line: string) => (logs.push(JSON.parse(line) as EmailStack["logs"][number]), true) } as unknown as NodeJS.WritableStream,
  });
  const bus = await Bus.connect(busOptions(loaded, nats.url, "e2e-test", logger));
  await bus.provision();
  const runner = await startRunner({ loaded, bus: busOptions(loaded, nats.url, "agent-runner", logger), logger });
  const stack: EmailStack = {
    dataDir,
    loaded,
    nats,
    llm,
    mail,
    bus,
    runner,
    logs,
    async startIngress() {
      stack.ingress = await startIngress(emailIngress, {
        adapter: adapterSettings(emailIngress, loaded, EMAIL_ADAPTER, env),
        bus: busOptions(loaded, nats.url, `ingress-${EMAIL_ADAPTER}`, ingressLogger),
        logger: ingressLogger,
      });
      return stack.ingress;
    },
    async stopIngress() {
      await stack.ingress?.close();
      stack.ingress = undefined;
    },
    async received(address) {
      return (await mail.messages(address)).filter((m) => m.from?.value[0]?.address === MAIL.mom);
    },
    async stop() {
      await stack.stopIngress();
      await runner.close();
      await bus.drain();
      await mail.stop();
      await llm.close();
      await nats.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  await stack.startIngress();
  return stack;
}
