import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startRunner, type RunningService } from "@mom/agent-runner";
import { Bus, busOptions } from "@mom/bus";
import { createLogger, loadConfig } from "@mom/config";
import { type FakeLlm, type FakeMatrix, freePort, type MxUser, startFakeLlm, startFakeMatrix, startTestNats, type TestNats } from "@mom/testing";
import { spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeTestDataDir } from "../support/data-dir.js";
import { eventually } from "../support/discord-stack.js";
import { inboundMessages } from "../support/inbound.js";
import { OutputCapture } from "../support/output-capture.js";
import { sample, scrape } from "../support/prometheus.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const MAIN = join(root, "services/ingress-matrix/dist/main.js");

// The Matrix ingress deployed as mom deploys a platform it does not ship: config.json declares an
// `external` adapter, and the ingress is a process of its own (`node …/main.js --adapter <name>
// --data-dir <dir>`) next to an unchanged runner. It runs under plain Node here, so matrix-bot-sdk
// loads with the stand-in for the native crypto engine the machine does not have.
describe("the Matrix ingress as its own process (main.js), an external adapter of config.json", () => {
  let nats: TestNats;
  let llm: FakeLlm;
  let matrix: FakeMatrix;
  let dataDir: string;
  let bus: Bus;
  let runner: RunningService;
  let ana: MxUser;
  let room: string;
  beforeAll(async () => {
    nats = await startTestNats();
    llm = await startFakeLlm();
    matrix = await startFakeMatrix();
    ana = matrix.user("ana", "Ana");
    room = matrix.createRoom({ members: [ana, matrix.user("bob")] });
    dataDir = writeTestDataDir("mom-matrix-proc-", nats, llm, {
      log: { level: "info" },
      adapters: {
        "matrix-home": { type: "external", platform: "matrix", settings: { homeserverUrl: matrix.url, accessToken: "env:MX_TOKEN", userId: matrix.bot.userId, editIntervalMs: 200 } },
        broken: { type: "external", platform: "matrix", settings: { homeserverUrl: matrix.url, accessToken: "env:MX_TOKEN", autoJoin: "yes" } },
      },
    });
    const env = { MX_TOKEN: matrix.accessToken };
    const logger = createLogger("e2e-matrix-proc", { level: "warn" });
    const loaded = loadConfig(dataDir, env);
    bus = await Bus.connect(busOptions(loaded, nats.url, "e2e-test", logger));
    await bus.provision();
    runner = await startRunner({ loaded, bus: busOptions(loaded, nats.url, "agent-runner", logger), logger });
  });
  afterAll(async () => {
    await runner?.close();
    await bus?.drain();
    await matrix?.close();
    await llm?.close();
    await nats?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  function run(adapter: string, env: NodeJS.ProcessEnv = {}) {
    const childEnv: NodeJS.ProcessEnv = { ...process.env, MX_TOKEN: matrix.accessToken, ...env };
    delete childEnv.NATS_URL;
    const child = spawn(process.execPath, [MAIN, "--adapter", adapter, "--data-dir", dataDir], { env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
    const err = new OutputCapture();
    child.stderr.setEncoding("utf8").on("data", err.write);
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    return { child, exited, err };
  }

  it("starts from config.json, answers a mention in the room, says on /readyz while /sync fails, exits 0 on SIGTERM", async () => {
    const httpPort = await freePort();
    matrix.fail("sync", 1);
    const p = run("matrix-home", { MOM_HTTP_PORT: String(httpPort) });
    try {
      await p.err.waitFor("matrix ingress receiving", 30_000);
      const receiving = JSON.parse(p.err.text.split("\n").find((l) => l.includes("matrix ingress receiving"))!);
      expect(receiving).toMatchObject({ level: "info", service: "ingress-matrix-home", adapter: "matrix-home", platform: "matrix" });
      const readyz = async () => {
        const r = await fetch(`http://127.0.0.1:${httpPort}/readyz`);
        return [r.status, await r.json()] as const;
      };
      const failing = await eventually(async () => {
        const seen = await readyz();
        return seen[0] === 503 ? seen : undefined;
      }, "/readyz while sync fails");
      expect(failing[1]).toEqual({ status: "not ready", reason: expect.stringMatching(/^ingress-matrix-home: Matrix sync failing since \S+: HTTP 502$/) });

      // Someone speaks meanwhile: matrix-bot-sdk syncs again after its back-off (5–15 s) and nothing is lost.
      llm.enqueue({ text: "Hello from a process of its own." });
      const trigger = matrix.say(room, ana, matrix.mention("are you there?"));
      const answer = await eventually(() => matrix.botMessages(room).find((m) => m.body.startsWith("Hello from a process of its own.")), "the answer", 45_000);
      expect(answer.replyTo).toBe(trigger.event_id);
      expect(await readyz()).toEqual([200, { status: "ready" }]);
      await p.err.waitFor("matrix sync works again", 5000);
      expect((await inboundMessages(bus)).find((m) => m.id === trigger.event_id)).toMatchObject({ channelId: room, isMention: true, sender: { id: ana.userId } });
      expect(sample(await scrape(httpPort), "mom_messages_in_total", { adapter: "matrix-home", source: "ingress" })).toBe(1);
    } finally {
      p.child.kill("SIGTERM");
    }
    expect(await p.exited).toBe(0);
  }, 90_000);

  it("a bad setting stops it at start, naming the file and the field (exit 2); a token of another user, too (exit 1)", async () => {
    const bad = run("broken");
    expect(await bad.exited).toBe(2);
    expect(bad.err.text).toMatch(/^matrix ingress: .*config\.json.*\/adapters\/broken\/settings\/autoJoin/s);

    const config = JSON.parse(readFileSync(join(dataDir, "config.json"), "utf8"));
    config.adapters.other = { type: "external", platform: "matrix", settings: { homeserverUrl: matrix.url, accessToken: "env:MX_TOKEN", userId: "@someone:example.org" } };
    writeFileSync(join(dataDir, "config.json"), JSON.stringify(config));
    const other = run("other");
    expect(await other.exited).toBe(1);
    expect(other.err.text).toContain(`matrix ingress: matrix adapter "other": the access token belongs to ${matrix.bot.userId}, not to the configured userId @someone:example.org`);

    const refused = run("matrix-home", { MX_TOKEN: "syt_wrong" });
    expect(await refused.exited).toBe(1);
    expect(refused.err.text).toContain('matrix ingress: matrix adapter "matrix-home": the access token was refused (whoami: M_UNKNOWN_TOKEN)');
  }, 60_000);
});
