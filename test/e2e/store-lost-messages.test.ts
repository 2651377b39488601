import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Bus } from "@mom/bus";
import { createLogger } from "@mom/config";
import type { ChannelMessage } from "@mom/contracts";
import { freePort, startFakeLlm, type FakeLlm } from "@mom/testing";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";
import { outboundEvents } from "../support/streams.js";
import { connectionOf } from "../../libs/bus/src/bus.js"; // the NATS handles behind a Bus: tests and benches only

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

async function listening(port: number): Promise<void> {
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, "127.0.0.1").once("connect", () => (s.destroy(), resolve(true))).once("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
}

const until = async (check: () => Promise<boolean>, what: string) => {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

// Two nats-servers on one store (a second `mom up`, before the data dir lock) left streams with
// fewer messages than their consumers had seen, and mom answered nothing afterwards. The store's
// message files are removed here by hand to get exactly that state.
describe("a stream whose store lost messages its consumers had seen", () => {
  let llm: FakeLlm;
  let dir: string;
  let storeDir: string;
  let port: number;
  let nats: ChildProcess | undefined;
  let runner: ChildProcess | undefined;
  const startNats = async () => {
    nats = spawn(process.env.NATS_SERVER_BIN || "nats-server", ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], { stdio: "ignore" });
    await listening(port);
  };
  const stopNats = async () => {
    const exited = new Promise((r) => nats!.once("exit", r));
    nats!.kill("SIGTERM");
    await exited;
  };
  const startRunner = (out: OutputCapture) => {
    runner = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "runner", dir], { env: { ...process.env, NATS_URL: "" }, stdio: ["ignore", "ignore", "pipe"] });
    runner.stderr!.setEncoding("utf8").on("data", out.write);
  };
  const stopRunner = async () => {
    const exited = new Promise((r) => runner!.once("exit", r));
    runner!.kill("SIGTERM");
    await exited;
  };
  const mention = (id: string, text: string): ChannelMessage => ({
    id,
    channelId: "local",
    timestamp: new Date().toISOString(),
    sender: { id: "u1", username: "ana", isBot: false },
    text,
    attachments: [],
    isMention: true,
  });
  const answered = async (text: string) => {
    const bus = await Bus.connect({ url: `nats://127.0.0.1:${port}`, name: "test", logger: createLogger("test", { level: "silent" }) });
    try {
      return (await outboundEvents(bus)).some((e) => e.event.type === "run_ended" && e.event.finalText === text);
    } finally {
      await bus.drain();
    }
  };
  /** How far the runners' durable on MOM_IN says it delivered (0: not at all, or no durable). */
  const durableDeliveredUpTo = async () => {
    const bus = await Bus.connect({ url: `nats://127.0.0.1:${port}`, name: "test", logger: createLogger("test", { level: "silent" }) });
    try {
      return (await connectionOf(bus).jsm.consumers.info("MOM_IN", "agent-runner")).delivered.stream_seq;
    } catch {
      return 0;
    } finally {
      await bus.drain();
    }
  };
  const publish = async (m: ChannelMessage) => {
    const bus = await Bus.connect({ url: `nats://127.0.0.1:${port}`, name: "test", logger: createLogger("test", { level: "silent" }) });
    await bus.publish(bus.subjects.channel("in", { adapter: "cli", channelId: "local" }), m, `cli:local:${m.id}`);
    await bus.drain();
  };

  beforeAll(async () => {
    llm = await startFakeLlm();
    dir = mkdtempSync(join(tmpdir(), "mom-lost-"));
    storeDir = join(dir, "nats");
    port = await freePort();
    writeFileSync(join(dir, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(join(dir, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { url: `nats://127.0.0.1:${port}` } }));
  });
  afterAll(async () => {
    runner?.kill("SIGKILL");
    nats?.kill("SIGKILL");
    await llm.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the runner says so and answers again", async () => {
    await startNats();
    const before = new OutputCapture();
    startRunner(before);
    await before.waitFor("agent runner ready", 30_000);
    for (const n of [1, 2, 3]) {
      llm.enqueue({ text: `answer ${n}` });
      await publish(mention(`m${n}`, `question ${n}`));
      await until(() => answered(`answer ${n}`), `answer ${n}`);
    }
    await stopRunner();
    await stopNats();

    const msgs = join(storeDir, "jetstream", "$G", "streams", "MOM_IN", "msgs");
    for (const f of readdirSync(msgs)) rmSync(join(msgs, f));
    await startNats();
    // nats-server 2.9 and 2.10 keep the durable where it was; newer servers reset it themselves.
    const durableAhead = await durableDeliveredUpTo() > 0;
    const after = new OutputCapture();
    startRunner(after);
    await after.waitFor("agent runner ready", 30_000);
    if (durableAhead) expect(after.text).toMatch(/consumer agent-runner is ahead of stream MOM_IN \(delivered up to #3, the stream ends at #0\).*recreating the consumer to read from #1/);
    expect(after.text).toMatch(/channel cli\/local was handled up to MOM_IN #3 but the stream ends at #0.*reading the channel from #1 again/);

    llm.enqueue({ text: "answer after the loss" });
    await publish(mention("m4", "still there?"));
    await until(() => answered("answer after the loss"), "an answer after the loss");
    await stopRunner();
  }, 120_000);
});
