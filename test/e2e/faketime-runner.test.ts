import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Bus } from "@mom/bus";
import { type ChannelMessage, OutboundEvent, type UsageRecord } from "@mom/contracts";
import { type FakeLlm, startFakeLlm, startTestNats, type TestNats, usageRecord } from "@mom/testing";
import { openLedgerStream } from "@mom/usage";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { OutputCapture } from "../support/output-capture.js";
import { writeTestDataDir } from "../support/data-dir.js";

// A `mom runner` process whose clock says it is the first second of December (Debian's faketime;
// the test and nats-server keep the real clock), with a monthly limit and a usage ledger holding
// only November's calls: it must become ready and answer (docs/auth.md#spend-limits).
const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const START = "2026-12-01 00:00:30";
// faketime's own form (no -f): the clock starts there and runs on; a frozen clock would stall timers.
const hasFaketime = spawnSync("faketime", [START, "true"], { stdio: "ignore" }).status === 0;
if (!hasFaketime) console.log("skipped: faketime not installed (apt-get install -y faketime)");


describe("a runner started on the first of a month (faketime)", () => {
  let nats: TestNats;
  let llm: FakeLlm;
  let bus: Bus;
  let dataDir: string;
  let child: ChildProcess | undefined;
  const events: OutboundEvent[] = [];

  beforeAll(async () => {
    if (!hasFaketime) return;
    nats = await startTestNats();
    llm = await startFakeLlm();
    // 60,000 tokens in November, a 50,000 a month budget: counted in December, it would refuse the call.
    // Sandbox "host": the mention needs no tool, and bwrap under faketime fails anyway (libfaketime
    // cannot open its semaphore in the sandbox's read-only /dev/shm).
    dataDir = writeTestDataDir("mom-faketime-", nats, llm, { limits: { global: { month: { tokens: 50_000 } } }, sandbox: { type: "host" }, log: { level: "info" } });
    bus = await Bus.connect({ url: nats.url, name: "faketime-test", namespace: nats.namespace, logger: pino({ level: "silent" }) });
    await bus.provision();
    const ledger = await openLedgerStream(bus);
    await ledger.append("cli.local", usageRecord("n1", "2026-11-15T10:00:00.000Z", 30_000), "n1");
    await ledger.append("cli.local", usageRecord("n2", "2026-11-30T23:59:59.000Z", 30_000), "n2");
    bus.follow({ stream: "OUT", filterSubject: bus.subjects.wildcard("out"), from: 1, schema: OutboundEvent, handler: (d) => void events.push(d.data) });
  });

  afterAll(async () => {
    if (!hasFaketime) return;
    // faketime runs the runner as its own child: end the whole group, or the runner outlives the test.
    if (child?.pid !== undefined) {
      const exited = child.exitCode === null && child.signalCode === null ? new Promise((r) => child!.once("exit", r)) : undefined;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
      await exited;
    }
    await bus.drain().catch(() => {});
    await llm.close();
    await nats.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  (hasFaketime ? it : it.skip)(
    "becomes ready within 20 s, answers a mention, and records the call in December",
    async () => {
      const env: NodeJS.ProcessEnv = { ...process.env, TZ: "UTC" };
      delete env.NATS_URL;
      child = spawn("faketime", [START, process.execPath, join(root, "services/cli/bin/mom.js"), "runner", dataDir], { env, stdio: ["ignore", "ignore", "pipe"], detached: true });
      const err = new OutputCapture();
      child.stderr!.setEncoding("utf8").on("data", err.write);
      await err.waitFor("agent runner ready", 20_000);
      const ready = JSON.parse(err.text.split("\n").find((l) => l.includes("agent runner ready"))!) as { time: string };
      expect(ready.time).toMatch(/^2026-12-01T00:0/);

      llm.enqueue({ text: "answered in December" });
      const message: ChannelMessage = {
        id: "december-1",
        channelId: "local",
        timestamp: new Date().toISOString(),
        sender: { id: "U1", username: "alice", isBot: false },
        text: "hello",
        attachments: [],
        isMention: true,
      };
      await bus.publish(bus.subjects.channel("in", { adapter: "cli", channelId: "local" }), message, message.id);
      const deadline = Date.now() + 20_000;
      let ended: OutboundEvent | undefined;
      while (!(ended = events.find((e) => e.event.type === "run_ended"))) {
        if (Date.now() > deadline) throw new Error(`no run_ended within 20 s; runner log:\n${err.text}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(ended.event).toMatchObject({ type: "run_ended", finalText: "answered in December" });
      // The runner's clock ran on from the faked start (a frozen one would have stalled its timers).
      expect(Date.parse(ended.ts)).toBeGreaterThan(Date.parse(ready.time));
      expect(ended.ts).toMatch(/^2026-12-01T00:0/);

      const records = (await (await openLedgerStream(bus)).readSince(new Date(0))).map((r) => r.data as UsageRecord);
      expect(records.map((r) => r.ts.slice(0, 10))).toEqual(["2026-11-15", "2026-11-30", "2026-12-01"]);
      expect(err.text).not.toContain("still replaying");
    },
    60_000,
  );
});
