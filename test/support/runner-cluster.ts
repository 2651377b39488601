// Several `mom runner` processes on one NATS and one workspace, a fake model, and an observer of
// mom.out: what the scale-out tests (and their faults) are made of.
import { Bus } from "@mom/bus";
import { ChannelMessage, OutboundEvent } from "@mom/contracts";
import { type FakeLlm, type FakeRequest, spawnNatsServer, startFakeLlm, type TestNats } from "@mom/testing";
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pino } from "pino";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "./output-capture.js";

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
  private count = 0;
  private observing?: { stop(): void };

  private constructor(
    readonly nats: TestNats,
    readonly llm: FakeLlm,
    readonly dataDir: string,
    readonly bus: Bus,
  ) {}

  static async start(runner: Record<string, unknown> = {}): Promise<RunnerCluster> {
    const nats = await spawnNatsServer();
    const llm = await startFakeLlm();
    const dataDir = mkdtempSync(join(tmpdir(), "mom-cluster-"));
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(
      join(dataDir, "config.json"),
      JSON.stringify({
        model: "fake/fake-model",
        nats: { url: nats.url, namespace: nats.namespace },
        runner: { leaseSeconds: 4, shutdownGraceSeconds: 5, maxConcurrentRuns: 64, ...runner },
        log: { level: "info" },
      }),
    );
    const bus = await Bus.connect({ url: nats.url, name: "cluster-test", namespace: nats.namespace, logger: pino({ level: "silent" }), reconnectTimeWaitMs: 250 });
    await bus.provision();
    const c = new RunnerCluster(nats, llm, dataDir, bus);
    c.observe();
    return c;
  }

  /** Starts one more `mom runner` process; resolves when it is ready. */
  async addRunner(): Promise<RunnerProc> {
    const name = `r${++this.count}`;
    const env = { ...process.env, MOM_RUNNER_ID: name };
    delete env.NATS_URL;
    const child = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "runner", this.dataDir], { env, stdio: ["ignore", "ignore", "pipe"] });
    const err = new OutputCapture();
    child.stderr!.setEncoding("utf8").on("data", err.write);
    if (process.env.MOM_CLUSTER_LOGS) child.stderr!.on("data", (chunk: string) => appendFileSync(join(process.env.MOM_CLUSTER_LOGS!, `${name}.log`), chunk));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const p = { name, child, err, exited };
    this.runners.push(p);
    await err.waitFor("agent runner ready", 30_000);
    return p;
  }

  async publish(channel: string, n: number): Promise<void> {
    const message: ChannelMessage = {
      id: `${channel}-${n}`,
      channelId: channel,
      timestamp: new Date().toISOString(),
      sender: { id: "U1", username: "alice", isBot: false },
      text: question(channel, n),
      attachments: [],
      isMention: true,
    };
    await this.bus.publish(this.bus.subjects.channel("in", { adapter: "cli", channelId: channel }), message, message.id, { retryForMs: 60_000, timeoutMs: 1000 });
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
    for (const r of this.runners) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill("SIGKILL");
    await Promise.all(this.runners.map((r) => r.exited));
    await this.bus.drain().catch(() => {});
    await this.llm.close();
    await this.nats.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  private observe(): void {
    this.observing = this.bus.follow({
      stream: "OUT",
      filterSubject: this.bus.subjects.wildcard("out"),
      from: 1,
      schema: OutboundEvent,
      handler: (d) => {
        this.events.push({ streamSeq: d.streamSeq, channel: d.channel!.channelId, e: d.data });
      },
    });
  }
}
