// Several `mom runner` processes on one NATS and one workspace, a fake model, and an observer of
// mom.out: what the scale-out tests (and their faults) are made of.
import type { Bus } from "@mom/bus";
import { type ChannelMessage, channelKey, channelsBucket, OutboundEvent, runnersBucket } from "@mom/contracts";
import { type FakeLlm, type FakeRequest, spawnNatsCluster, spawnNatsServer, startFakeLlm, type TestNats, type TestNatsCluster } from "@mom/testing";
import { openLedgerStream, validRecords } from "@mom/usage";
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "./output-capture.js";
import { provisionedBus } from "./provisioned-bus.js";
import { expect } from "@jest/globals";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

export interface RunnerProc {
  name: string;
  child: ChildProcess;
  err: OutputCapture;
  exited: Promise<number | null>;
}

export interface ObservedEvent {
  streamSeq: number;
  channel: string;
  e: OutboundEvent;
  /** Wall time (Date.now()) the observer received it: what stalls are measured with. */
  at: number;
}

export interface ClusterStartOptions {
  /** Run a JetStream cluster of this many nats-servers (every stream at replicas = this) instead of one server. */
  cluster?: number;
  /** With MOM_CLUSTER_LOGS, keep this cluster's logs in this folder of it (several clusters in one file). */
  logsSubdir?: string;
  /** config.json `adapters` (default: the terminal's `cli` only). */
  adapters?: Record<string, object>;
  /** More top-level config.json keys (e.g. `console` for a web console watching the cluster). */
  config?: Record<string, unknown>;
}

/** The mention text for message n of a channel, and the answer the fake model gives to it. */
export const question = (channel: string, n: number) => `q ${channel}:${n}`;
export const answer = (channel: string, n: number) => `a ${channel}:${n}`;

/** The fake model answers the newest "q c:n" in the conversation after a pause in [min, max] ms. */
export function answering(minMs: number, maxMs: number) {
  return (req: FakeRequest) => {
    for (let i = req.messages.length - 1; i >= 0; i--) {
      const m = req.messages[i];
      const text = typeof m.content === "string" ? m.content : (m.content ?? []).map((c: { text?: string }) => c.text ?? "").join("");
      const found = m.role === "user" ? /q (\S+):(\d+)/.exec(text) : null;
      if (found) return { text: answer(found[1]!, Number(found[2])), delayMs: minMs + Math.floor(Math.random() * (maxMs - minMs)) };
    }
    return { text: "nothing to answer" };
  };
}

export class RunnerCluster {
  readonly runners: RunnerProc[] = [];
  readonly events: ObservedEvent[] = [];
  /**
   * Answers (run_ended with a text) as the runners publish them, seen by a plain subscription on
   * mom.out: when the answer left a runner, whatever happens to the stream's consumers. `events`
   * is what a reader of the stream (an ingress) gets, and when.
   */
  readonly published: { at: number; channel: string; text: string }[] = [];
  private count = 0;
  private observing?: { stop(): void };
  private listening?: { unsubscribe(): void };

  private constructor(
    readonly nats: TestNats,
    readonly llm: FakeLlm,
    readonly dataDir: string,
    readonly bus: Bus,
    /** The nats-servers one by one, when started with `{ cluster }`. */
    readonly cluster: TestNatsCluster | undefined,
    private readonly replicas: number | undefined,
    /** MOM_CLUSTER_LOGS (or a folder of it): runner logs and the workspace's path are kept there. */
    readonly logsDir: string | undefined,
  ) {}

  static async start(runner: Record<string, unknown> = {}, opts: ClusterStartOptions = {}): Promise<RunnerCluster> {
    const logsDir = process.env.MOM_CLUSTER_LOGS ? join(process.env.MOM_CLUSTER_LOGS, opts.logsSubdir ?? "") : undefined;
    if (logsDir) mkdirSync(logsDir, { recursive: true });
    const cluster = opts.cluster ? await spawnNatsCluster(opts.cluster, undefined, { keepLogsIn: logsDir }) : undefined;
    const nats = cluster ?? (await spawnNatsServer());
    const replicas = opts.cluster;
    let llm: FakeLlm | undefined;
    let dataDir: string | undefined;
    let bus: Bus | undefined;
    try {
      llm = await startFakeLlm();
      dataDir = mkdtempSync(join(tmpdir(), "mom-cluster-"));
      writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
      writeFileSync(
        join(dataDir, "config.json"),
        JSON.stringify({
          model: "fake/fake-model",
          // As production's overlay: every stream and bucket replicated on every node.
          nats: { url: nats.url, namespace: nats.namespace, ...(replicas !== undefined && { streams: { replicas } }) },
          runner: { leaseSeconds: 4, shutdownGraceSeconds: 5, maxConcurrentRuns: 64, ...runner },
          log: { level: "info" },
          ...(opts.adapters && { adapters: opts.adapters }),
          ...opts.config,
        }),
      );
      bus = await provisionedBus(nats, "cluster-test", replicas);
    } catch (err) {
      // Nobody else holds these yet: a failed start must not leave servers behind.
      await bus?.drain().catch(() => {});
      await llm?.close();
      await nats.stop();
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      throw err;
    }
    const c = new RunnerCluster(nats, llm!, dataDir!, bus!, cluster, replicas, logsDir);
    c.observe();
    return c;
  }

  /** Starts one more `mom runner` process (with `extraEnv`, e.g. MOM_HTTP_PORT); resolves when it is ready. */
  async addRunner(extraEnv: NodeJS.ProcessEnv = {}): Promise<RunnerProc> {
    const name = `r${++this.count}`;
    const env: NodeJS.ProcessEnv = { ...process.env, ...extraEnv, MOM_RUNNER_ID: name };
    delete env.NATS_URL;
    const child = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "runner", this.dataDir], { env, stdio: ["ignore", "ignore", "pipe"] });
    const err = new OutputCapture();
    child.stderr!.setEncoding("utf8").on("data", err.write);
    // MOM_CLUSTER_LOGS=<dir>: keep each runner's JSON log there, to read after a failure.
    const logsDir = this.logsDir;
    if (logsDir) child.stderr!.on("data", (chunk: string) => appendFileSync(join(logsDir, `${name}.log`), chunk));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const p = { name, child, err, exited };
    this.runners.push(p);
    await err.waitFor("agent runner ready", 30_000);
    return p;
  }

  /** The runner id the channel's record names (undefined: no record yet). */
  async ownerOf(channel: string): Promise<string | null | undefined> {
    const kv = await this.bus.existingKeyValue(channelsBucket(this.bus.subjects.namespace));
    const e = await kv?.get(channelKey({ adapter: "cli", channelId: channel }));
    return e?.operation === "PUT" ? (JSON.parse(e.string()) as { owner: string | null }).owner : undefined;
  }

  /** Channels whose record says `runner` has a run of theirs under way (or finished but not yet saved). */
  async runsOn(runner: string): Promise<string[]> {
    const kv = await this.bus.existingKeyValue(channelsBucket(this.bus.subjects.namespace));
    const out: string[] = [];
    if (!kv) return out;
    for await (const key of await kv.keys()) {
      const e = await kv.get(key);
      if (e?.operation !== "PUT") continue;
      const r = JSON.parse(e.string()) as { owner: string | null; run?: unknown };
      if (r.owner === runner && r.run !== undefined) out.push(key);
    }
    return out;
  }

  /** channel key -> runId of the runs the records say `runner` has under way (or finished but not yet saved). */
  async runIdsOn(runner: string): Promise<Map<string, string>> {
    const kv = await this.bus.existingKeyValue(channelsBucket(this.bus.subjects.namespace));
    const out = new Map<string, string>();
    if (!kv) return out;
    for await (const key of await kv.keys()) {
      const e = await kv.get(key);
      if (e?.operation !== "PUT") continue;
      const r = JSON.parse(e.string()) as { owner: string | null; run?: { runId?: string } };
      if (r.owner === runner && r.run !== undefined) out.set(key, r.run.runId ?? "");
    }
    return out;
  }

  /**
   * Waits until `runner` has runs really in flight, for a fault that needs one to land on: a
   * record outlives its run by up to SAVE_DEBOUNCE_MS, so a run counts only when the same run is
   * still recorded `settleMs` later (it is then at the model). Loops until there is one, so a
   * fault is never refused by timing; throws after `timeoutMs`. Returns their channel keys.
   */
  async runsInFlight(runner: string, timeoutMs = 30_000, settleMs = 500): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const seen = await this.runIdsOn(runner).catch(() => new Map<string, string>());
      if (seen.size > 0) {
        await new Promise((r) => setTimeout(r, settleMs));
        const again = await this.runIdsOn(runner).catch(() => new Map<string, string>());
        const still = [...again].filter(([key, runId]) => seen.get(key) === runId).map(([key]) => key);
        if (still.length > 0) return still;
      }
      if (Date.now() > deadline) throw new Error(`no run of ${runner} in flight within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The usage ledger's records (stream MOM_USAGE of this namespace), in stream order. */
  async usageRecords(): Promise<{ records: { id: string; channel: string; runId?: string; estimated?: boolean }[]; invalid: number }> {
    const stream = await openLedgerStream(this.bus, this.replicas);
    const { records, invalid } = validRecords(await stream.readSince(new Date(0)));
    return { records, invalid: invalid.length };
  }

  /** Channel keys whose record names `runner` as owner. */
  async channelsOf(runner: string): Promise<string[]> {
    const kv = await this.bus.existingKeyValue(channelsBucket(this.bus.subjects.namespace));
    const out: string[] = [];
    if (!kv) return out;
    for await (const key of await kv.keys()) {
      const e = await kv.get(key);
      if (e?.operation === "PUT" && (JSON.parse(e.string()) as { owner: string | null }).owner === runner) out.push(key);
    }
    return out;
  }

  /** Channels per live runner, from their heartbeats. */
  async loads(): Promise<Map<string, number>> {
    const kv = await this.bus.existingKeyValue(runnersBucket(this.bus.subjects.namespace));
    const out = new Map<string, number>();
    if (!kv) return out;
    for await (const key of await kv.keys()) {
      const e = await kv.get(key);
      if (e?.operation === "PUT") out.set(key, (JSON.parse(e.string()) as { channels: number }).channels);
    }
    return out;
  }

  runner(name: string): RunnerProc {
    const r = this.runners.find((x) => x.name === name);
    if (!r) throw new Error(`no runner ${name}`);
    return r;
  }

  async publish(channel: string, n: number, text = question(channel, n)): Promise<void> {
    const message: ChannelMessage = {
      id: `${channel}-${n}`,
      channelId: channel,
      timestamp: new Date().toISOString(),
      sender: { id: "U1", username: "alice", isBot: false },
      text,
      attachments: [],
      isMention: true,
    };
    await this.bus.publish(this.bus.subjects.channel("in", { adapter: "cli", channelId: channel }), message, message.id, { retryForMs: 60_000, timeoutMs: 1000 });
  }

  /** Every outbound event of one channel, in stream order. */
  eventsOf(channel: string): OutboundEvent[] {
    return this.events.filter((x) => x.channel === channel).map((x) => x.e);
  }

  /** run_ended events with an answer, per channel, in stream order. */
  answers(): Map<string, { text: string; runId: string }[]> {
    const out = new Map<string, { text: string; runId: string }[]>();
    for (const { channel, e } of this.events) {
      if (e.event.type === "run_ended" && e.event.finalText) {
        const list = out.get(channel) ?? [];
        list.push({ text: e.event.finalText, runId: e.runId });
        out.set(channel, list);
      }
    }
    return out;
  }

  async waitForAnswers(total: number, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ([...this.answers().values()].reduce((n, l) => n + l.length, 0) < total) {
      if (Date.now() > deadline) {
        const short = [...this.answers().entries()].map(([ch, l]) => `${ch}:${l.length}`).join(" ");
        throw new Error(`only ${[...this.answers().values()].reduce((n, l) => n + l.length, 0)} of ${total} answers (${short})`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  async stop(): Promise<void> {
    this.observing?.stop();
    this.listening?.unsubscribe();
    for (const r of this.runners) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill("SIGKILL");
    await Promise.all(this.runners.map((r) => r.exited));
    await this.bus.drain().catch(() => {});
    await this.llm.close();
    await this.nats.stop();
    // With MOM_CLUSTER_LOGS the workspace stays too (its path is in data-dir.txt there).
    if (this.logsDir) writeFileSync(join(this.logsDir, "data-dir.txt"), this.dataDir);
    else rmSync(this.dataDir, { recursive: true, force: true });
  }

  private observe(): void {
    this.listening = this.bus.subscribe(this.bus.subjects.wildcard("out"), {
      callback: (err, m) => {
        if (err) return;
        try {
          const e = JSON.parse(m.string()) as OutboundEvent;
          const channel = this.bus.subjects.parse(m.subject)?.channelId;
          if (channel !== undefined && e.event.type === "run_ended" && e.event.finalText) this.published.push({ at: Date.now(), channel, text: e.event.finalText });
        } catch {
          // not an event: the stream reader reports those
        }
      },
    });
    this.observing = this.bus.follow({
      stream: "OUT",
      filterSubject: this.bus.subjects.wildcard("out"),
      from: 1,
      schema: OutboundEvent,
      // A reader of what users see: it should notice a lost consumer as soon as an ingress's durable would.
      heartbeatMs: 1000,
      handler: (d) => {
        this.events.push({ streamSeq: d.streamSeq, channel: d.channel!.channelId, e: d.data, at: Date.now() });
      },
    });
  }
}

/**
 * The exactly-once checks: every mention 1..perChannel of each channel answered once and in order
 * on the bus; no two runs of a channel overlapping; one copy of each message and answer in
 * log.jsonl; one session in context.jsonl with each mention exactly once as a user turn.
 */
export function expectExactlyOnceInOrder(c: RunnerCluster, channels: string[], perChannel: number): void {
  const answers = c.answers();
  for (const ch of channels) {
    const got = (answers.get(ch) ?? []).map((x) => x.text);
    expect({ ch, got }).toEqual({ ch, got: Array.from({ length: perChannel }, (_, k) => answer(ch, k + 1)) });
  }

  // One run at a time per channel: after a run_started, the next lifecycle event of that channel
  // is the end of the same run.
  const open = new Map<string, string>();
  for (const { channel: ch, e } of c.events) {
    if (e.event.type === "run_started") {
      if (open.has(ch)) {
        // What the channel saw, to tell which runner did what from the runners' logs.
        const history = c.events
          .filter((x) => x.channel === ch && (x.e.event.type === "run_started" || x.e.event.type === "run_ended"))
          .map(({ streamSeq, e: y }) => `${streamSeq} ${y.event.type} ${y.runId} ${y.ts}${y.event.type === "run_ended" ? ` ${y.event.stopReason} ${y.event.errorMessage ?? ""}` : ""}`);
        expect({ ch, overlapping: open.get(ch), history }).toEqual({ ch, overlapping: undefined, history });
      }
      open.set(ch, e.runId);
    } else if (e.event.type === "run_ended" && open.get(ch) === e.runId) open.delete(ch);
  }

  for (const ch of channels) {
    const dir = join(c.dataDir, "workspace/channels/cli", ch);
    const log = readFileSync(join(dir, "log.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    const ids = log.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    const replies = log.filter((e) => e.isBot).map((e) => e.text);
    expect({ ch, replies }).toEqual({ ch, replies: Array.from({ length: perChannel }, (_, k) => answer(ch, k + 1)) });
    expect(existsSync(join(dir, "context.jsonl"))).toBe(true);
    const ctx = readFileSync(join(dir, "context.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect({ ch, sessions: ctx.filter((e) => e.type === "session").length, ctx: ctx.length > 0 && ctx.filter((e) => e.type === "session").length !== 1 ? ctx.map((e) => `${e.type}:${e.message?.role ?? e.customType ?? ""}`).join(" ") : "" }).toEqual({ ch, sessions: 1, ctx: "" });
    const userText = ctx
      .filter((e) => e.type === "message" && e.message.role === "user")
      .map((e) => (e.message.content as { text?: string }[]).map((x) => x.text ?? "").join(""));
    for (let n = 1; n <= perChannel; n++) {
      const once = new RegExp(`${question(ch, n)}(?!\\d)`);
      expect({ q: question(ch, n), copies: userText.filter((t) => once.test(t)).length }).toEqual({ q: question(ch, n), copies: 1 });
    }
  }
}
