import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Bus } from "@mom/bus";
import { busOptions } from "@mom/bus";
import { createLogger, loadConfig } from "@mom/config";
import type { ChannelMessage } from "@mom/contracts";
import { startFakeLlm, startTestNats, type FakeLlm, type TestNats } from "@mom/testing";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";
import { outboundEvents } from "../support/streams.js";

// Two `mom runner` processes share one inbound stream: a 429 seen by one puts the credential in
// the shared cooldown (NATS KV), and the other never asks with it.
const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const KEY_A = "sk-test-aaaa-0123456789abcdef";
const KEY_B = "sk-test-bbbb-0123456789abcdef";

interface Runner {
  child: ChildProcess;
  log: OutputCapture;
  exited: Promise<number | null>;
}

function spawnRunner(dataDir: string): Runner {
  const env: NodeJS.ProcessEnv = { ...process.env, MOM_KEY_B: KEY_B };
  delete env.NATS_URL;
  const child = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "runner", dataDir], { env, stdio: ["ignore", "pipe", "pipe"] });
  const log = new OutputCapture();
  child.stderr!.setEncoding("utf8").on("data", log.write);
  child.stdout!.setEncoding("utf8").on("data", log.write);
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  return { child, log, exited };
}

describe("two runner processes share cooldowns", () => {
  let nats: TestNats;
  let llm: FakeLlm;
  let dataDir: string;
  let bus: Bus;
  let runners: Runner[] = [];
  beforeAll(async () => {
    nats = await startTestNats();
    llm = await startFakeLlm();
    dataDir = mkdtempSync(join(tmpdir(), "mom-auth-replicas-"));
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { url: nats.url, namespace: nats.namespace }, auth: { order: { fake: ["a", "b"] } }, log: { level: "debug" } }));
    writeFileSync(
      join(dataDir, "auth-profiles.json"),
      JSON.stringify({ profiles: [{ id: "a", provider: "fake", type: "api_key", secret: KEY_A }, { id: "b", provider: "fake", type: "api_key", secret: "env:MOM_KEY_B" }] }),
      { mode: 0o600 },
    );
    const loaded = loadConfig(dataDir, {});
    bus = await Bus.connect(busOptions(loaded, nats.url, "e2e-test", createLogger("e2e", { level: "warn" })));
    await bus.provision();
  });
  afterAll(async () => {
    for (const r of runners) if (r.child.exitCode === null) r.child.kill("SIGKILL");
    await bus?.drain();
    await llm.close();
    await nats.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("one replica's 429 spares the other, and no secret reaches either log", async () => {
    llm.byKey(KEY_A, { error: { status: 429, message: "Rate limit reached", retryAfterSeconds: 120 } });
    runners = [spawnRunner(dataDir), spawnRunner(dataDir)];
    await Promise.all(runners.map((r) => r.log.waitFor("agent runner ready", 30_000)));

    const handledBy = (channel: string) => runners.findIndex((r) => r.log.text.split("\n").some((l) => l.includes('"msg":"run started"') && l.includes(`"channel":"cli/${channel}"`)));
    const handled: number[] = [];
    // Channels go to whichever replica pulls first; keep going until both have answered one.
    for (let i = 1; i <= 12 && !(handled.includes(0) && handled.includes(1) && handled.length >= 2); i++) {
      const channelId = `c${i}`;
      const m: ChannelMessage = {
        id: `m-${i}`,
        channelId,
        timestamp: new Date().toISOString(),
        sender: { id: "u1", username: "tester", isBot: false },
        text: `hello ${i}`,
        attachments: [],
        isMention: true,
      };
      await bus.publish(bus.subjects.channel("in", { adapter: "cli", channelId }), m, m.id);
      for (const deadline = Date.now() + 20_000; ; ) {
        const ended = (await outboundEvents(bus, { adapter: "cli", channelId })).find((e) => e.event.type === "run_ended");
        if (ended) {
          expect(ended.event).toMatchObject({ stopReason: "stop", finalText: "ok" });
          break;
        }
        if (Date.now() > deadline) throw new Error(`no answer in ${channelId}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      handled.push(handledBy(channelId));
    }
    expect(handled.includes(0) && handled.includes(1)).toBe(true);

    // Only the very first call used key a; every later call, on either replica, went straight to b.
    const keys = llm.requests.map((r) => String(r.headers.authorization).replace("Bearer ", ""));
    expect(keys[0]).toBe(KEY_A);
    expect(keys.slice(1).every((k) => k === KEY_B)).toBe(true);
    expect(keys.filter((k) => k === KEY_A)).toHaveLength(1);
    const refusedOn = runners.findIndex((r) => r.log.text.includes("credential refused; cooling down"));
    expect(handled.slice(1)).toContain(1 - refusedOn);

    for (const r of runners) r.child.kill("SIGTERM");
    expect(await Promise.all(runners.map((r) => r.exited))).toEqual([0, 0]);
    for (const r of runners) {
      expect(r.log.text).toContain('"level":"debug"');
      expect(r.log.text).not.toContain(KEY_A);
      expect(r.log.text).not.toContain(KEY_B);
      expect(r.log.text).not.toContain("fake-key");
    }
  }, 120_000);
});
