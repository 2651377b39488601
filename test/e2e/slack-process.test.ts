import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Bus } from "@mom/bus";
import { busOptions } from "@mom/bus";
import { createLogger, loadConfig } from "@mom/config";
import { adapterSettings, startIngress } from "@mom/ingress-sdk";
import { slackIngress } from "@mom/ingress-slack";
import { type FakeSlack, startFakeSlack, startTestNats, type TestNats } from "@mom/testing";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";
import { connectionOf } from "../../libs/bus/src/bus.js"; // the NATS handles behind a Bus: tests and benches only

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

// `mom ingress <slack adapter>` as deployed: config.json with env: tokens, pino JSON on stderr,
// Socket Mode against the fake Slack, messages onto the bus, a clean exit on SIGTERM.
describe("mom ingress <slack adapter> as a process", () => {
  let nats: TestNats;
  let slack: FakeSlack;
  let dataDir: string;
  beforeAll(async () => {
    nats = await startTestNats();
    slack = await startFakeSlack();
    dataDir = mkdtempSync(join(tmpdir(), "mom-slack-proc-"));
    writeFileSync(
      join(dataDir, "config.json"),
      JSON.stringify({
        nats: { url: nats.url, namespace: nats.namespace },
        adapters: { "slack-acme": { type: "slack", botToken: "env:ACME_SLACK_BOT", appToken: "env:ACME_SLACK_APP", apiUrl: slack.apiUrl, dm: "everyone" } },
      }),
    );
  });
  afterAll(async () => {
    await slack.close();
    await nats.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("connects over Socket Mode, publishes what people say, and exits 0 on SIGTERM", async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, ACME_SLACK_BOT: slack.botToken, ACME_SLACK_APP: slack.appToken };
    delete env.NATS_URL;
    const child = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "ingress", "slack-acme", dataDir], { env, stdio: ["ignore", "pipe", "pipe"] });
    const err = new OutputCapture();
    child.stderr.setEncoding("utf8").on("data", err.write);
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      await err.waitFor("slack ingress connected", 30_000);
      const line = err.text.split("\n").find((l) => l.includes("slack ingress connected"))!;
      expect(JSON.parse(line)).toMatchObject({ level: "info", adapter: "slack-acme", botUserId: slack.botUserId });
      expect(slack.calls.calls.map((c) => c.method)).toEqual(expect.arrayContaining(["auth.test", "users.list", "conversations.list", "apps.connections.open"]));
      expect(slack.calls.calls.every((c) => c.token === (c.method === "apps.connections.open" ? "app" : "bot"))).toBe(true);

      const loaded = loadConfig(dataDir, { ACME_SLACK_BOT: "x", ACME_SLACK_APP: "y" });
      const bus = await Bus.connect(busOptions(loaded, nats.url, "e2e-test", createLogger("e2e", { level: "warn" })));
      try {
        const { ts } = slack.userMessage({ channel: "C0GENERAL", user: "U0BOB", text: "hello <@U0ALICE>" });
        const subject = bus.subjects.channel("in", { adapter: "slack-acme", channelId: "C0GENERAL" });
        let found: { id: string; text: string } | undefined;
        for (let i = 0; i < 100 && !found; i++) {
          const m = await connectionOf(bus).jsm.streams.getMessage(bus.subjects.stream("IN"), { last_by_subj: subject }).catch(() => undefined);
          if (m) found = m.json<{ id: string; text: string }>();
          else await new Promise((r) => setTimeout(r, 50));
        }
        expect(found).toMatchObject({ id: ts, text: "hello @alice" });
      } finally {
        await bus.drain();
      }
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    expect(slack.openSockets()).toBe(0);
  }, 60_000);

  it("refuses to start with a bot token Slack does not accept, saying so", async () => {
    const env = { ACME_SLACK_BOT: "xoxb-wrong", ACME_SLACK_APP: slack.appToken };
    const loaded = loadConfig(dataDir, env);
    const logger = createLogger("e2e", { level: "silent" });
    const adapter = adapterSettings(slackIngress, loaded, "slack-acme", env);
    await expect(startIngress(slackIngress, { adapter, bus: busOptions(loaded, nats.url, "ingress-slack-acme", logger), logger })).rejects.toThrow(
      /slack adapter slack-acme: the bot token was refused \(auth\.test: .*invalid_auth/,
    );
  });
});
