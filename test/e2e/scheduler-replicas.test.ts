import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Bus } from "@mom/bus";
import { startTestNats, type TestNats } from "@mom/testing";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { inboundMessages } from "../support/inbound.js";
import { OutputCapture } from "../support/output-capture.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Replica {
  child: ChildProcess;
  err: OutputCapture;
  exited: Promise<number | null>;
  lines(): Array<Record<string, unknown>>;
}

function startReplica(dataDir: string): Replica {
  const env = { ...process.env };
  delete env.NATS_URL;
  const child = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "scheduler", dataDir], { env, stdio: ["ignore", "ignore", "pipe"] });
  const err = new OutputCapture();
  child.stderr!.setEncoding("utf8").on("data", err.write);
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  const lines = () => err.jsonLines();
  return { child, err, exited, lines };
}

// Two `mom scheduler` processes, as two Kubernetes replicas would run, on one workspace and one
// NATS: every firing reaches the stream exactly once.
describe("two scheduler replicas on one workspace", () => {
  let nats: TestNats;
  let dataDir: string;
  let bus: Bus;
  let replicas: Replica[] = [];
  beforeAll(async () => {
    nats = await startTestNats();
    dataDir = mkdtempSync(join(tmpdir(), "mom-sched-replicas-"));
    writeFileSync(
      join(dataDir, "config.json"),
      JSON.stringify({ nats: { url: nats.url, namespace: nats.namespace }, scheduler: { maxPerMinutePerChannel: 100, pollIntervalMs: 200 } }),
    );
    mkdirSync(join(dataDir, "workspace", "channels", "cli", "local"), { recursive: true });
    mkdirSync(join(dataDir, "workspace", "events"), { recursive: true });
    bus = await Bus.connect({ url: nats.url, name: "replicas-test", namespace: nats.namespace, logger: pino({ level: "silent" }) });
    await bus.provision();
  });
  afterAll(async () => {
    for (const r of replicas) r.child.kill("SIGKILL");
    await bus?.drain();
    await nats?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("fires each immediate, one-shot and periodic event once, and reports a bad file once", async () => {
    replicas = [startReplica(dataDir), startReplica(dataDir)];
    await Promise.all(replicas.map((r) => r.err.waitFor("scheduler ready", 30_000)));
    const events = join(dataDir, "workspace", "events");
    const write = (name: string, o: object) => writeFileSync(join(events, name), JSON.stringify(o));
    const at = new Date(Math.ceil((Date.now() + 2500) / 1000) * 1000).toISOString();
    write("soon.json", { type: "one-shot", channelId: "cli/local", text: "one-shot", at });
    write("tick.json", { type: "periodic", channelId: "cli/local", text: "tick", schedule: "*/2 * * * * *", timezone: "UTC" });
    write("now.json", { type: "immediate", channelId: "cli/local", text: "immediate" });
    write("bad.json", { type: "periodic", channelId: "cli/local", text: "x", schedule: "every day", timezone: "UTC" });

    // Long enough for the one-shot and at least two periodic ticks, seen by both replicas.
    const deadline = Date.now() + 15_000;
    const ticksFiredByBoth = () => {
      const perReplica = replicas.map((r) => new Set(r.lines().filter((l) => l.file === "tick.json" && l.msgId).map((l) => l.msgId as string)));
      return [...perReplica[0]!].filter((id) => perReplica[1]!.has(id)).length;
    };
    while (Date.now() < deadline && !(Date.now() > Date.parse(at) + 500 && ticksFiredByBoth() >= 2)) await sleep(100);
    rmSync(join(events, "tick.json"));
    await sleep(700);

    const msgs = await inboundMessages(bus);
    const ids = msgs.map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length); // no message twice
    const of = (file: string) => msgs.filter((m) => (m.metadata?.event as { file?: string })?.file === file);
    expect(of("now.json")).toHaveLength(1);
    expect(of("soon.json").map((m) => m.id)).toEqual([`soon.json@${at}`]);
    const ticks = of("tick.json");
    expect(ticks.length).toBeGreaterThanOrEqual(2);
    for (const t of ticks) expect(t.id).toMatch(/^tick\.json@\d{4}-\d\d-\d\dT\d\d:\d\d:\d[02468]\.000Z$/);
    // The bad file: moved once (one note, no "-2" copy) and reported once.
    expect(readdirSync(join(events, "invalid")).sort()).toEqual(["bad.json", "bad.json.error"]);
    expect(msgs.filter((m) => m.text.includes("events/bad.json was rejected"))).toHaveLength(1);
    expect(existsSync(join(events, "now.json")) || existsSync(join(events, "soon.json"))).toBe(false);

    // Both replicas really fired: the same ticks were published by each, and JetStream dropped the copies.
    const fired = replicas.flatMap((r) => r.lines().filter((l) => String(l.msg).startsWith("event fired")));
    expect(ticksFiredByBoth()).toBeGreaterThanOrEqual(2);
    expect(fired.filter((l) => l.duplicate === true).length).toBeGreaterThanOrEqual(2);
    expect(new Set(fired.map((l) => l.pid)).size).toBe(2);

    for (const r of replicas) r.child.kill("SIGTERM");
    expect(await Promise.all(replicas.map((r) => r.exited))).toEqual([0, 0]);
  }, 60_000);
});
