import { afterEach, beforeEach, describe, expect, it } from "@jest/globals";
import { type ChannelAgent, formatChatLine, type RunOutcome, type RunTrigger, ZERO_USAGE } from "@mom/agent";
import type { Bus } from "@mom/bus";
import { type ChannelMessage, createSubjects, type InterruptedRun, type OutboundEvent, REANNOUNCED_SEQ } from "@mom/contracts";
import { type ChannelStore, WorkspaceLayout } from "@mom/store";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { ActiveRun } from "./active-run.js";
import { ChannelWorker, type WorkerLedger } from "./channel-worker.js";
import type { ChannelState } from "./cluster/channel-slots.js";

/**
 * The worker on its own: a real channel store on a temp dir; the bus, the ledger's KV record and
 * the agent are its outer edges here (the runner and chaos suites run them for real).
 */
const ref = { adapter: "cli", channelId: "c1" };

function mention(id: string, text = "hi"): ChannelMessage {
  return { id, channelId: ref.channelId, timestamp: new Date().toISOString(), sender: { id: "u1", username: "ann", isBot: false }, text, attachments: [], isMention: true };
}

/** Records what the worker asks of its ledger, and how many lines log.jsonl had at each call. */
class FakeLedger implements WorkerLedger {
  interrupted?: InterruptedRun;
  readonly excused = false;
  readonly calls: string[] = [];
  private last = 0;
  constructor(private readonly logLines: () => number) {}
  begin(seq: number): boolean {
    if (seq <= this.last) return false;
    this.last = seq;
    return true;
  }
  async runStarting(run: Omit<InterruptedRun, "phase">): Promise<void> {
    this.calls.push(`runStarting ${run.messageId} (log: ${this.logLines()} lines)`);
  }
  async runNotStarted(): Promise<void> {
    this.calls.push("runNotStarted");
  }
  async handedOver(): Promise<void> {
    this.calls.push("handedOver");
  }
  async done(seq: number): Promise<void> {
    this.calls.push(`done ${seq}`);
  }
}

describe("ChannelWorker", () => {
  let dir: string;
  let store: ChannelStore;
  let ledger: FakeLedger;
  let published: OutboundEvent[];
  let msgIds: string[];
  let runs: string[];
  /** Runs wait here for a slot until `openSlot()`. */
  let slotOpen: Promise<void>;
  let openSlot: () => void;

  const bus = {
    subjects: createSubjects("mom"),
    async publish(_subject: string, payload: OutboundEvent, msgId: string) {
      published.push(payload);
      msgIds.push(msgId);
      return { seq: published.length, duplicate: false };
    },
  } as unknown as Bus;

  const agent = {
    modelName: "fake/fake",
    async run(trigger: { id: string }): Promise<RunOutcome> {
      runs.push(trigger.id);
      return { stopReason: "stop", finalText: `answer to ${trigger.id}`, usage: ZERO_USAGE };
    },
    async abort() {},
    dispose() {},
  } as unknown as ChannelAgent;

  let slot: { state: ChannelState | undefined };

  function worker(a: ChannelAgent = agent): ChannelWorker {
    return new ChannelWorker({
      bus,
      ref,
      slot,
      store,
      createAgent: async () => a,
      log: pino({ level: "silent" }),
      runTimeoutMs: 60_000,
      runSlot: async (fn) => {
        await slotOpen;
        return fn();
      },
      slotFree: () => true,
      busyMode: "queue",
      active: new ActiveRun(),
      ledger,
      maxCrashes: 3,
      publishRetryMs: 0,
      deadLetter: async () => {},
    });
  }

  const until = async (what: () => boolean) => {
    for (let i = 0; i < 500 && !what(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(what()).toBe(true);
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "mom-worker-"));
    store = new WorkspaceLayout(dir).channel(ref);
    const lines = () => (existsSync(store.logFile) ? readFileSync(store.logFile, "utf8").split("\n").length - 1 : 0);
    ledger = new FakeLedger(lines);
    published = [];
    msgIds = [];
    runs = [];
    slotOpen = new Promise((r) => (openSlot = r));
    slot = { state: "owned" };
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("records the run of a mention in a quiet channel while the mention is logged, once", async () => {
    openSlot();
    const w = worker();
    w.deliver(1, mention("m1"));
    await until(() => published.some((e) => e.event.type === "run_ended"));
    expect(ledger.calls[0]).toBe("runStarting m1 (log: 0 lines)");
    expect(ledger.calls.filter((c) => c.startsWith("runStarting"))).toHaveLength(1);
    expect(runs).toEqual(["m1"]);
    expect(published.map((e) => e.event.type)).toEqual(["run_started", "run_ended"]);
    // The record names the run the channel then sees.
    expect(new Set(published.map((e) => e.runId)).size).toBe(1);
  });

  // Under a lost quorum a runner answered, could not publish the run's events and set the channel
  // down; the next owner announced the run's end again, but its start had never reached the bus:
  // the ingress drew an answer it could not reply with (test/chaos/quorum-loss.test.ts).
  it("announces again the start of a run its previous owner never ended (the start's own msg-id), then its end: one that had answered", async () => {
    openSlot();
    ledger.interrupted = { seq: 4, messageId: "m4", runId: "r-cut", crashes: 0, phase: "running" };
    await store.appendLog({ id: "r-cut:reply", date: new Date().toISOString(), user: "mom", userName: "mom", text: "the answer", attachments: [], isBot: true, runId: "r-cut" });
    worker().deliver(4, mention("m4", "count"));
    await until(() => published.some((e) => e.event.type === "run_ended"));
    expect(published.map((e) => [e.runId, e.seq, e.event.type])).toEqual([
      ["r-cut", REANNOUNCED_SEQ, "run_started"],
      ["r-cut", REANNOUNCED_SEQ + 1, "run_ended"],
    ]);
    expect(msgIds).toEqual(["r-cut:start", "r-cut:end"]);
    expect(published[0]!.event).toMatchObject({ trigger: { messageId: "m4", senderId: "u1", username: "ann", text: "count" }, model: "fake/fake" });
    expect(published[1]!.event).toMatchObject({ finalText: "the answer" });
    expect(runs).toEqual([]);
  });

  it("announces again the start of a run its previous owner never ended, then its end as interrupted, and runs the message anew: one that had not answered", async () => {
    openSlot();
    ledger.interrupted = { seq: 4, messageId: "m4", runId: "r-cut", crashes: 0, phase: "running" };
    worker().deliver(4, mention("m4"));
    await until(() => published.filter((e) => e.event.type === "run_ended").length === 2);
    expect(published.map((e) => [e.runId === "r-cut" ? "r-cut" : "new", e.event.type])).toEqual([
      ["r-cut", "run_started"],
      ["r-cut", "run_ended"],
      ["new", "run_started"],
      ["new", "run_ended"],
    ]);
    expect(msgIds.slice(0, 2)).toEqual(["r-cut:start", "r-cut:end"]);
    expect(published[1]!.event).toMatchObject({ stopReason: "aborted", errorMessage: expect.stringMatching(/^interrupted/) });
    expect(published[2]!.event).toMatchObject({ resumedFrom: "r-cut" });
    expect(runs).toEqual(["m4"]);
  });

  it("records a mention that waits behind a run when that run starts, not before", async () => {
    const w = worker();
    w.deliver(1, mention("m1"));
    w.deliver(2, mention("m2"));
    await until(() => ledger.calls.length === 1);
    openSlot();
    await until(() => published.filter((e) => e.event.type === "run_ended").length === 2);
    expect(ledger.calls.filter((c) => c.startsWith("runStarting"))).toEqual(["runStarting m1 (log: 0 lines)", "runStarting m2 (log: 3 lines)"]);
    expect(runs).toEqual(["m1", "m2"]);
  });

  it("forgets the recorded run when the channel is set down before the run began", async () => {
    const w = worker();
    w.deliver(1, mention("m1"));
    await until(() => ledger.calls.length === 1);
    slot.state = "draining";
    const released = w.release(1_000);
    openSlot();
    await released;
    expect(ledger.calls).toEqual(["runStarting m1 (log: 0 lines)", "runNotStarted"]);
    expect(runs).toEqual([]);
    expect(published).toEqual([]);
  });

  it("reads its lifecycle from the channel's slot: stopping or let go of, it takes nothing in and writes nothing", async () => {
    openSlot();
    const w = worker();
    slot.state = "stopping";
    w.deliver(1, mention("m1"));
    slot.state = undefined;
    w.deliver(2, mention("m2"));
    await new Promise((r) => setTimeout(r, 50));
    expect(w.busy).toBe(false);
    expect(existsSync(store.logFile)).toBe(false);
    expect(ledger.calls).toEqual([]);
    expect(runs).toEqual([]);
  });

  it("busy mode steer: a `stop` cancels a message steered into the run that pi had not delivered yet, as it cancels queued ones", async () => {
    openSlot();
    // As pi's session: a steered line waits for the end of the current turn; aborted first, it is left over.
    let ended!: () => void;
    const runEnds = new Promise<void>((r) => (ended = r));
    let stopped = false;
    const steered: RunTrigger[] = [];
    const steering = {
      ...agent,
      async run(trigger: { id: string }): Promise<RunOutcome> {
        runs.push(trigger.id);
        if (runs.length > 1) return { stopReason: "stop", finalText: `answer to ${trigger.id}`, usage: ZERO_USAGE };
        await runEnds;
        return { stopReason: "aborted", finalText: "", usage: ZERO_USAGE, undelivered: steered.map(formatChatLine) };
      },
      async steer(trigger: RunTrigger) {
        steered.push(trigger);
        return true;
      },
      async abort() {
        stopped = true;
      },
    } as unknown as ChannelAgent;
    const w = new ChannelWorker({
      bus, ref, slot, store, ledger,
      createAgent: async () => steering,
      log: pino({ level: "silent" }),
      runTimeoutMs: 60_000,
      runSlot: (fn) => fn(),
      slotFree: () => true,
      busyMode: "steer",
      active: new ActiveRun(),
      maxCrashes: 3,
      publishRetryMs: 0,
      deadLetter: async () => {},
    });
    w.deliver(1, mention("m1", "start the deploy"));
    await until(() => runs.length === 1);
    w.deliver(2, mention("m2", "and then tag the release"));
    await until(() => steered.length === 1);
    w.deliver(3, mention("m3", "stop"));
    await until(() => stopped);
    // Said while the stopped run is still ending: a request of its own, answered after it.
    w.deliver(4, mention("m4", "what time is it?"));
    await until(() => published.some((e) => e.event.type === "run_queued"));
    ended();
    await until(() => [2, 3, 4].every((seq) => ledger.calls.includes(`done ${seq}`)));
    expect(steered.map((t) => t.id)).toEqual(["m2"]);
    expect(runs).toEqual(["m1", "m4"]);
    const ends = published.filter((e) => e.event.type === "run_ended").map((e) => e.event as { stopReason: string; errorMessage?: string; finalText: string });
    expect(ends).toEqual([
      expect.objectContaining({ stopReason: "aborted" }),
      expect.objectContaining({ finalText: "answer to m4" }),
      expect.objectContaining({ stopReason: "aborted", errorMessage: "cancelled by @ann before it started" }),
    ]);
  });

  it("draining, a run past the grace is cut off and handed over; the next owner runs the message", async () => {
    openSlot();
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const w = worker({
      ...agent,
      async run() {
        await slow;
        return { stopReason: "aborted", finalText: "", usage: ZERO_USAGE };
      },
      async abort() {
        release();
      },
    } as unknown as ChannelAgent);
    w.deliver(1, mention("m1"));
    await until(() => published.some((e) => e.event.type === "run_started"));
    slot.state = "draining";
    await w.release(20);
    const end = published.find((e) => e.event.type === "run_ended")!.event as { stopReason: string; errorMessage?: string };
    expect(end.stopReason).toBe("aborted");
    expect(end.errorMessage).toMatch(/another runner will answer/);
    expect(ledger.calls).toContain("handedOver");
    expect(ledger.calls.filter((c) => c.startsWith("done"))).toEqual([]);
  });

  it("draining, a run cut off while its agent is still being prepared never starts the agent, and is handed over", async () => {
    openSlot();
    // As pi's session: an abort before the run began has nothing to abort, and this model never answers.
    let agentReady!: () => void;
    const preparing = new Promise<void>((r) => (agentReady = r));
    const hanging = {
      ...agent,
      async run(trigger: { id: string }) {
        runs.push(trigger.id);
        return new Promise<RunOutcome>(() => {});
      },
    } as unknown as ChannelAgent;
    let asked = false;
    const w = new ChannelWorker({
      bus, ref, slot, store, ledger,
      createAgent: async () => ((asked = true), await preparing, hanging),
      log: pino({ level: "silent" }),
      runTimeoutMs: 60_000,
      runSlot: (fn) => fn(),
      slotFree: () => true,
      busyMode: "queue",
      active: new ActiveRun(),
      maxCrashes: 3,
      publishRetryMs: 0,
      deadLetter: async () => {},
    });
    w.deliver(1, mention("m1"));
    // The run is in hand: its agent is being made.
    await until(() => asked);
    slot.state = "draining";
    const released = w.release(0);
    await new Promise((r) => setTimeout(r, 20));
    agentReady();
    await released;
    expect(runs).toEqual([]);
    const end = published.find((e) => e.event.type === "run_ended")!.event as { stopReason: string; errorMessage?: string };
    expect(end.errorMessage).toMatch(/another runner will answer/);
    expect(ledger.calls).toContain("handedOver");
  });
});
