// Shared by the scheduler tests only (excluded from the build).
import { Bus } from "@mom/bus";
import { loadConfig, type LoadedConfig, type SchedulerConfig } from "@mom/config";
import { ChannelMessage, parsePayload, validator } from "@mom/contracts";
import { startTestNats, uniqueNamespace, type TestNats } from "@mom/testing";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { FakeClock } from "../clock.js";
import { startScheduler, type RunningScheduler } from "../start-scheduler.js";

export const T0 = Date.parse("2026-01-05T08:00:00Z"); // a Monday, 09:00 in Vienna

export interface Harness {
  dataDir: string;
  eventsDir: string;
  loaded: LoadedConfig;
  clock: FakeClock;
  bus: Bus;
  logs: Record<string, unknown>[];
  sched?: RunningScheduler;
  start(): Promise<RunningScheduler>;
  /** Writes events/<name> (an object is JSON-encoded), optionally with a modification time. */
  write(name: string, content: unknown, mtimeMs?: number): void;
  /** Every ChannelMessage on the inbound stream so far, in order, with its subject. */
  inbound(): Promise<Array<ChannelMessage & { subject: string }>>;
  waitForInbound(n: number, timeoutMs?: number): Promise<Array<ChannelMessage & { subject: string }>>;
  /** Lets the scheduler read the directory and finish what it started. */
  settle(): Promise<void>;
  stop(): Promise<void>;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function waitFor(pred: () => boolean | Promise<boolean>, timeoutMs = 5000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

let sharedNats: TestNats | undefined;
export async function natsForFile(): Promise<TestNats> {
  sharedNats ??= await startTestNats();
  return sharedNats;
}
export async function stopNats(): Promise<void> {
  await sharedNats?.stop();
  sharedNats = undefined;
}

/** A temp data dir (channel cli/local exists), a fake clock at T0, a bus on a fresh namespace. */
export async function harness(scheduler: Partial<SchedulerConfig> = {}, opts: { settleMs?: number; channels?: string[] } = {}): Promise<Harness> {
  const nats = await natsForFile();
  const namespace = uniqueNamespace("sched");
  const dataDir = mkdtempSync(join(tmpdir(), "mom-sched-"));
  writeFileSync(
    join(dataDir, "config.json"),
    JSON.stringify({ nats: { url: nats.url, namespace }, adapters: { cli: { type: "cli" }, term: { type: "cli" } }, scheduler: { pollIntervalMs: 100, ...scheduler } }),
  );
  const loaded = loadConfig(dataDir, {});
  for (const ch of opts.channels ?? ["cli/local", "term/C1"]) mkdirSync(join(loaded.paths.workspaceDir, "channels", ch), { recursive: true });
  const eventsDir = join(loaded.paths.workspaceDir, "events");
  mkdirSync(eventsDir, { recursive: true });
  const logs: Record<string, unknown>[] = [];
  const logger = pino({ level: "debug" }, { write: (s: string) => void logs.push(JSON.parse(s)) });
  const bus = await Bus.connect({ url: nats.url, name: "sched-test", namespace, logger: pino({ level: "silent" }) });
  await bus.provision();
  const clock = new FakeClock(T0);
  const v = validator(ChannelMessage);
  const h: Harness = {
    dataDir,
    eventsDir,
    loaded,
    clock,
    bus,
    logs,
    async start() {
      h.sched = await startScheduler(
        { loaded, logger, clock, settleMs: opts.settleMs ?? 150, retryMs: 200 },
        { url: nats.url, name: "scheduler", namespace, logger: pino({ level: "silent" }) },
      );
      return h.sched;
    },
    write(name, content, mtimeMs) {
      const path = join(eventsDir, name);
      writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content));
      if (mtimeMs !== undefined) utimesSync(path, mtimeMs / 1000, mtimeMs / 1000);
    },
    async inbound() {
      const stream = "IN" as const;
      const info = await bus.streamInfo(stream);
      if (!info) throw new Error(`stream ${stream} does not exist`);
      const out: Array<ChannelMessage & { subject: string }> = [];
      for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
        const m = await bus.storedMessage(stream, seq).catch(() => undefined);
        if (!m) continue;
        const r = parsePayload(v, m.data);
        if (!r.ok) throw new Error(`invalid ChannelMessage on ${m.subject}: ${r.reason}`);
        out.push({ ...r.value, subject: m.subject });
      }
      return out;
    },
    async waitForInbound(n, timeoutMs = 5000) {
      let got: Array<ChannelMessage & { subject: string }> = [];
      await waitFor(async () => (got = await h.inbound()).length >= n, timeoutMs, `${n} inbound messages (have ${got.length})`);
      return got;
    },
    async settle() {
      await h.sched!.scheduler.rescan();
      await h.sched!.scheduler.idle();
    },
    async stop() {
      await h.sched?.close();
      await bus.drain();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return h;
}
