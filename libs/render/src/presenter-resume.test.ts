import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Bus, type FileSource } from "@mom/bus";
import { type OutboundEvent, type OutboundEventBody, REANNOUNCED_SEQ, type Receipt } from "@mom/contracts";
import { spawnNatsServer, type TestNats, uniqueNamespace } from "@mom/testing";
import { pino } from "pino";
import { DeliveryReceipts } from "./delivery-receipts.js";
import { plainDialect } from "./dialect.js";
import { busDrawnRuns, drawnKey } from "./drawn-runs.js";
import { type ChatSurface, MessageLayout } from "./message-layout.js";
import { type Arrival, Presenter } from "./presenter.js";
import { type ThreadSurface, ThreadedLayout } from "./threaded-layout.js";

// A process drawing runs is killed -9 mid-run; the events it had not acked come to the process
// started after it. Each presenter here has a connection of its own and shares nothing with the
// one before it but the bus (a real nats-server) and the platform (one recording fake): what a
// new process has. The second one must go on with the first one's progress message, and must not
// draw again an answer the first one delivered.

const USAGE = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const trigger = { messageId: "m1", senderId: "u1", username: "ana", text: "go" };
const ADAPTER = "tg";

interface Op {
  op: "post" | "edit" | "delete" | "upload" | "prompt" | "closePrompt" | "mark" | "unmark";
  by: string;
  id?: string;
  text?: string;
  replyTo?: string;
}

/** One chat platform the processes share: every call, by whom, and each message's current text. */
function platform() {
  const ops: Op[] = [];
  const texts = new Map<string, string>();
  let n = 0;
  const surface = (by: string): ChatSurface => ({
    dialect: plainDialect(500),
    async post(_channel, text, at) {
      const id = String(++n);
      ops.push({ op: "post", by, id, text, ...(at.replyTo && { replyTo: at.replyTo }) });
      texts.set(id, text);
      return id;
    },
    async edit(_channel, id, text) {
      ops.push({ op: "edit", by, id, text });
      texts.set(id, text);
    },
    async delete(_channel, id) {
      ops.push({ op: "delete", by, id });
    },
    async upload() {
      ops.push({ op: "upload", by });
    },
    async prompt(_channel, text) {
      const id = String(++n);
      ops.push({ op: "prompt", by, id, text });
      return id;
    },
    async closePrompt(_channel, id, text) {
      ops.push({ op: "closePrompt", by, id, text });
    },
  });
  return { ops, texts, surface };
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  for (const end = Date.now() + ms; !cond(); await new Promise((r) => setTimeout(r, 10))) if (Date.now() > end) throw new Error("timed out");
}
const at = (runId: string, seq: number, event: OutboundEventBody): OutboundEvent => ({ runId, seq, ts: new Date().toISOString(), event }) as OutboundEvent;
const started = (runId: string) => at(runId, 0, { type: "run_started", trigger, model: "m" });
const toolStart = (runId: string) => at(runId, 1, { type: "tool_execution_start", toolCallId: "t1", toolName: "bash", label: "Counting", args: { command: "wc -l" } });
const toolEnd = (runId: string) => at(runId, 2, { type: "tool_execution_end", toolCallId: "t1", toolName: "bash", label: "Counting", isError: false, resultText: "3", durationMs: 5 });
const ended = (runId: string, finalText: string) => at(runId, 3, { type: "run_ended", stopReason: "stop", finalText, usage: USAGE, durationMs: 20 });

describe("a presenter started after another one died mid-run (records in the DRAWN bucket on a real nats-server)", () => {
  let nats: TestNats;
  const buses: Bus[] = [];
  const log = pino({ level: "silent" });

  beforeAll(async () => {
    nats = await spawnNatsServer();
  });
  afterAll(async () => {
    for (const b of buses) await b.drain().catch(() => {});
    await nats?.stop();
  });

  /** A "process": its own connection, its own presenter over the shared platform, its own receipts. */
  async function processOf(name: string, namespace: string, surface: ChatSurface, receipts: Receipt[]) {
    const bus = await Bus.connect({ url: nats.url, name, namespace, logger: log, drainTimeoutMs: 2000 });
    buses.push(bus);
    const deliveries = new DeliveryReceipts(ADAPTER, async (_channel, r) => void receipts.push(r), log);
    const p = new Presenter(new MessageLayout(surface), { files: {} as FileSource, maxBytes: 1000, log, editIntervalMs: 10, deliveries, drawn: busDrawnRuns(bus, ADAPTER, log) });
    const draw = (e: OutboundEvent, arrival?: Arrival) => p.handle("C1", e, arrival);
    return { bus, p, draw };
  }

  /** A platform with threads (its `marks`: a queued trigger is marked, not answered with a notice) and the "processes" drawing on it. */
  function threadedProcesses(namespace: string, marks = false) {
    const ops: Op[] = [];
    let n = 0;
    const threads = (by: string): ThreadSurface => ({
      dialect: plainDialect(500),
      name: "Threads",
      async post(_channel, m) {
        const id = `T${++n}`;
        ops.push({ op: "post", by, id, text: m.text });
        return id;
      },
      async edit(_channel, id, m) {
        ops.push({ op: "edit", by, id, text: m.text });
      },
      async delete(_channel, id) {
        ops.push({ op: "delete", by, id });
      },
      async prompt() {
        return "P";
      },
      async closePrompt() {},
      ...(marks && {
        async markQueued(_channel: string, id: string, queued: boolean) {
          ops.push({ op: queued ? "mark" : "unmark", by, id });
        },
      }),
    });
    const presenter = async (name: string) => {
      const bus = await Bus.connect({ url: nats.url, name, namespace, logger: log, drainTimeoutMs: 2000 });
      buses.push(bus);
      return new Presenter(new ThreadedLayout(threads(name), log), { files: {} as FileSource, maxBytes: 1000, log, editIntervalMs: 10, drawn: busDrawnRuns(bus, ADAPTER, log) });
    };
    return { ops, presenter };
  }

  it("the second one edits the first one's progress message into the answer and posts nothing", async () => {
    const ns = uniqueNamespace();
    const { ops, texts, surface } = platform();
    const receipts: Receipt[] = [];
    const first = await processOf("first", ns, surface("first"), receipts);
    expect(await first.draw(started("r1"))).toBe(true);
    expect(await first.draw(toolStart("r1"))).toBe(true);
    expect(ops).toEqual([{ op: "post", by: "first", id: "1", text: expect.stringContaining("Working"), replyTo: "m1" }]);
    // The first process dies here; its redraw still waiting is made (as it would a few ms later),
    // and nothing of it runs after. The events after the start go to the second.
    await first.p.close();
    const second = await processOf("second", ns, surface("second"), receipts);
    expect(await second.draw(toolEnd("r1"))).toBe(true);
    expect(await second.draw(ended("r1", "three lines"))).toBe(true);
    await second.p.close();
    const mine = ops.filter((o) => o.by === "second");
    expect(mine.filter((o) => o.op !== "edit")).toEqual([]);
    expect(mine.every((o) => o.id === "1")).toBe(true);
    expect(texts.get("1")).toMatch(/^three lines/);
    expect(receipts.map((r) => [r.type, r.detail])).toEqual([["delivery.succeeded", "accepted by the platform as 1"]]);
  });

  it("the second one, given the start again (drawn but not acked by the first), posts no second progress message", async () => {
    const ns = uniqueNamespace();
    const { ops, texts, surface } = platform();
    const receipts: Receipt[] = [];
    const first = await processOf("first", ns, surface("first"), receipts);
    await first.draw(started("r2"));
    const second = await processOf("second", ns, surface("second"), receipts);
    // JetStream redelivers what the dead process held, first of all its start.
    for (const e of [started("r2"), toolStart("r2"), toolEnd("r2"), ended("r2", "done twice? no")]) expect(await second.draw(e, { redelivered: e.seq === 0 })).toBe(true);
    await second.p.close();
    expect(ops.filter((o) => o.op === "post")).toHaveLength(1);
    expect(ops.filter((o) => o.by === "second").every((o) => o.op === "edit" && o.id === "1")).toBe(true);
    expect(texts.get("1")).toMatch(/^done twice\? no/);
  });

  // A runner that took the channel over announces the start of a run the previous owner never
  // ended again (REANNOUNCED_SEQ), then its end: the first owner's start may never have reached
  // the bus (a lost quorum cut it off), or it did and an earlier process drew it.
  const reannounced = (runId: string) => at(runId, REANNOUNCED_SEQ, { type: "run_started", trigger, model: "m" });
  const reannouncedEnd = (runId: string, finalText: string) => at(runId, REANNOUNCED_SEQ + 1, { type: "run_ended", stopReason: "stop", finalText, usage: USAGE, durationMs: 20 });

  it("a run's start announced again by a new runner, its first one never on the bus: the answer replies to the message", async () => {
    const ns = uniqueNamespace();
    const { ops, texts, surface } = platform();
    const only = await processOf("only", ns, surface("only"), []);
    expect(await only.draw(reannounced("r9"))).toBe(true);
    expect(await only.draw(reannouncedEnd("r9", "the answer"))).toBe(true);
    await only.p.close();
    expect(ops.filter((o) => o.op === "post")).toEqual([{ op: "post", by: "only", id: "1", text: expect.stringContaining("Working"), replyTo: "m1" }]);
    expect(texts.get("1")).toMatch(/^the answer/);
  });

  it("a run's start announced again by a new runner after an earlier process drew the first one: the second one edits that one's progress message", async () => {
    const ns = uniqueNamespace();
    const { ops, texts, surface } = platform();
    const first = await processOf("first", ns, surface("first"), []);
    await first.draw(started("r10"));
    await first.p.close();
    const second = await processOf("second", ns, surface("second"), []);
    expect(await second.draw(reannounced("r10"))).toBe(true);
    expect(await second.draw(reannouncedEnd("r10", "the answer"))).toBe(true);
    await second.p.close();
    expect(ops.filter((o) => o.op === "post")).toHaveLength(1);
    expect(ops.filter((o) => o.by === "second").every((o) => o.op === "edit" && o.id === "1")).toBe(true);
    expect(texts.get("1")).toMatch(/^the answer/);
  });

  it("given a run_ended the first one already delivered, the second one posts nothing (and records its receipt again, the same one)", async () => {
    const ns = uniqueNamespace();
    const { ops, surface } = platform();
    const receipts: Receipt[] = [];
    const first = await processOf("first", ns, surface("first"), receipts);
    await first.draw(started("r3"));
    await first.draw(ended("r3", "the answer"));
    expect(ops.map((o) => `${o.by} ${o.op} ${o.id}`)).toEqual(["first post 1", "first edit 1"]);
    // Drawn, but its ack never reached NATS: the run's end comes again, to the next process.
    const second = await processOf("second", ns, surface("second"), receipts);
    expect(await second.draw(ended("r3", "the answer"), { redelivered: true })).toBe(true);
    // A mid-run event redelivered after it changes nothing either.
    expect(await second.draw(toolStart("r3"), { redelivered: true })).toBe(true);
    await second.p.close();
    expect(ops.filter((o) => o.by === "second")).toEqual([]);
    expect(receipts.map((r) => r.receiptId)).toEqual(["r3:delivery", "r3:delivery"]);
    expect(receipts[1]!.detail).toBe(receipts[0]!.detail);
  });

  it("the same on a platform with threads: the second one edits the main message into the answer", async () => {
    const ns = uniqueNamespace();
    const { ops, presenter } = threadedProcesses(ns);
    const first = await presenter("first");
    await first.handle("C1", started("r4"));
    const second = await presenter("second");
    await second.handle("C1", toolStart("r4"));
    await second.handle("C1", toolEnd("r4"));
    await second.handle("C1", ended("r4", "threaded answer"));
    await second.close();
    // The answer is the main message; only its details (a thread under it) are new messages.
    expect(ops.filter((o) => o.by === "second" && o.id === "T1").at(-1)).toMatchObject({ op: "edit", text: expect.stringMatching(/^threaded answer/) });
    expect(ops.filter((o) => o.by === "second" && o.op === "post").map((o) => o.text)).toEqual([expect.stringContaining("Counting")]);
  });

  it("an approval prompt the first one posted is not posted again: the second one closes that one with the outcome", async () => {
    const ns = uniqueNamespace();
    const { ops, surface } = platform();
    const first = await processOf("first", ns, surface("first"), []);
    const asked = at("r6", 1, { type: "approval_requested", approvalId: "a1", toolId: "bash", risk: "high", argsSummary: "rm -rf build", requestedBy: { id: "u1", username: "ana" }, expiresAt: new Date(Date.now() + 60_000).toISOString(), approvers: ["u1"] });
    await first.draw(started("r6"));
    await first.draw(asked);
    await first.p.close();
    expect(ops.filter((o) => o.op === "prompt").map((o) => `${o.by} ${o.id}`)).toEqual(["first 2"]);
    // Drawn, its ack lost with the process: the prompt comes again, then the decision.
    const second = await processOf("second", ns, surface("second"), []);
    await second.draw(asked, { redelivered: true });
    expect(second.p.approval("a1")).toMatchObject({ prompt: "2", approvers: ["u1"] });
    await second.draw(at("r6", 2, { type: "approval_resolved", approvalId: "a1", outcome: "approved", decidedBy: "ana" }));
    await second.draw(ended("r6", "removed"));
    await second.p.close();
    expect(ops.filter((o) => o.op === "prompt")).toHaveLength(1);
    expect(ops.filter((o) => o.by === "second" && o.op === "closePrompt").map((o) => o.id)).toEqual(["2"]);
    expect(ops.filter((o) => o.by === "second" && o.op === "post")).toEqual([]);
  });

  it("a queued notice the first one posted is not posted again", async () => {
    const ns = uniqueNamespace();
    const { ops, surface } = platform();
    const queued = at("r7", 0, { type: "run_queued", trigger, position: 1 });
    const first = await processOf("first", ns, surface("first"), []);
    await first.draw(queued);
    const second = await processOf("second", ns, surface("second"), []);
    await second.draw(queued, { redelivered: true });
    // A notice the first one never posted (it died before) is posted by the second.
    await second.draw(at("r8", 0, { type: "run_queued", trigger: { ...trigger, messageId: "m2" }, position: 2 }), { redelivered: true });
    await second.p.close();
    expect(ops.map((o) => `${o.by} ${o.op} ${o.text?.match(/position \d/)?.[0]}`)).toEqual(["first post position 1", "second post position 2"]);
  });

  it("on a platform with threads, a queued notice or mark the first one put up is the one the second one's run start edits or removes", async () => {
    for (const marks of [false, true]) {
      const { ops, presenter } = threadedProcesses(uniqueNamespace(), marks);
      const queued = at("r9", 0, { type: "run_queued", trigger, position: 1 });
      const first = await presenter("first");
      await first.handle("C1", queued);
      const second = await presenter("second");
      await second.handle("C1", queued, { redelivered: true });
      await second.handle("C1", at("r9", 1, { type: "run_started", trigger, model: "m" }));
      await second.handle("C1", ended("r9", "after the wait"));
      await second.close();
      const shown = ops.map((o) => `${o.by} ${o.op} ${o.id}`);
      if (marks) expect(shown.slice(0, 3)).toEqual(["first mark m1", "second unmark m1", "second post T1"]);
      else expect(shown.slice(0, 2)).toEqual(["first post T1", "second edit T1"]);
      expect(ops.filter((o) => o.op === "mark")).toHaveLength(marks ? 1 : 0);
      // The answer is the main message (only the usage line goes under it).
      expect(ops.filter((o) => o.id === "T1").at(-1)).toMatchObject({ by: "second", text: expect.stringMatching(/^after the wait/) });
    }
  });

  it("an answer of several messages cut off after some: the second one sends only the rest", async () => {
    const ns = uniqueNamespace();
    const { ops, texts, surface } = platform();
    const receipts: Receipt[] = [];
    // The first process dies while its third post is on the way (it never comes back).
    const dying = surface("first");
    let posts = 0;
    const post = dying.post.bind(dying);
    dying.post = (channel, text, at) => (++posts === 3 ? new Promise<string>(() => {}) : post(channel, text, at));
    const first = await processOf("first", ns, dying, receipts);
    const long = ["one", "two", "three"].map((w) => `${w} ${"x".repeat(400)}`).join("\n\n");
    await first.draw(started("r10"));
    void first.draw(ended("r10", long));
    await until(() => posts === 3);
    const second = await processOf("second", ns, surface("second"), receipts);
    expect(await second.draw(ended("r10", long), { redelivered: true })).toBe(true);
    await second.p.close();
    const mine = ops.filter((o) => o.by === "second");
    expect(mine.map((o) => [o.op, o.text?.slice(0, 5)])).toEqual([["post", "three"]]);
    expect(["1", "2", mine[0]!.id!].map((id) => texts.get(id)?.slice(0, 5))).toEqual(["one x", "two x", "three"]);
    expect(receipts.map((r) => r.detail)).toEqual([`accepted by the platform as 1, 2, ${mine[0]!.id}`]);
  });

  it("a progress message posted anew (someone deleted the first) is the one the second one edits", async () => {
    const ns = uniqueNamespace();
    const { ops, texts, surface } = platform();
    const deleted = new Set<string>();
    const withDeletes = (by: string): ChatSurface => {
      const s = surface(by);
      const edit = s.edit!.bind(s);
      return { ...s, edit: (channel, id, text) => (deleted.has(id) ? Promise.reject(new Error("message to edit not found")) : edit(channel, id, text)), isGone: (err) => (err as Error).message === "message to edit not found" };
    };
    const first = await processOf("first", ns, withDeletes("first"), []);
    await first.draw(started("r11"));
    deleted.add("1");
    await first.draw(toolStart("r11"));
    await first.p.close();
    expect(ops.map((o) => `${o.by} ${o.op} ${o.id}`)).toEqual(["first post 1", "first post 2"]);
    const second = await processOf("second", ns, withDeletes("second"), []);
    await second.draw(toolEnd("r11"));
    await second.draw(ended("r11", "found it"));
    await second.p.close();
    expect(new Set(ops.filter((o) => o.by === "second").map((o) => `${o.op} ${o.id}`))).toEqual(new Set(["edit 2"]));
    expect(texts.get("2")).toMatch(/^found it/);
  });

  it("keeps only the ids it needs, under the adapter's own key, for a day", async () => {
    const ns = uniqueNamespace();
    const { surface } = platform();
    const first = await processOf("first", ns, surface("first"), []);
    await first.draw(started("r5"));
    const kv = await first.bus.keyValue(`${ns.toUpperCase().replace(/-/g, "_")}_DRAWN`);
    expect((await kv.get(drawnKey(ADAPTER, "r5")))?.json()).toEqual({ progress: { progressId: "1" } });
    await first.draw(ended("r5", "x"));
    expect((await kv.get(drawnKey(ADAPTER, "r5")))?.json()).toEqual({ answered: ["1"] });
    const status = await kv.status();
    expect(status.ttl).toBe(24 * 3600_000);
  });

  it("a record that could not be written while NATS was away is written once it is back", async () => {
    const own = await spawnNatsServer();
    const ns = uniqueNamespace();
    const bus = await Bus.connect({ url: own.url, name: "flaky", namespace: ns, logger: log, drainTimeoutMs: 500, reconnectTimeWaitMs: 100 });
    const drawn = busDrawnRuns(bus, ADAPTER, log, { writeWaitMs: 100 });
    const { texts, surface } = platform();
    const p = new Presenter(new MessageLayout(surface("only")), { files: {} as FileSource, maxBytes: 1000, log, editIntervalMs: 10, drawn });
    try {
      await p.handle("C1", started("f0"));
      expect(await drawn.read("f0")).toEqual({ progress: { progressId: "1" } });
      const back = own.restart!(3000);
      await new Promise((r) => setTimeout(r, 200));
      await p.handle("C1", ended("f0", "answered during the outage"));
      expect(texts.get("1")).toMatch(/^answered during the outage/);
      await back;
      const deadline = Date.now() + 20_000;
      let got: unknown;
      while (Date.now() < deadline && !(got = await drawn.read("f0").then((r) => r?.answered))) await new Promise((r) => setTimeout(r, 200));
      expect(got).toEqual(["1"]);
    } finally {
      await p.close();
      await bus.drain().catch(() => {});
      await own.stop().catch(() => {});
    }
  }, 40_000);

  it("answers on while the bucket cannot be reached: a failed write is logged, a failed read draws as before", async () => {
    const own = await spawnNatsServer();
    const ns = uniqueNamespace();
    const lines: string[] = [];
    const warn = pino({ level: "warn" }, { write: (l: string) => void lines.push(l) });
    const bus = await Bus.connect({ url: own.url, name: "cut-off", namespace: ns, logger: log, drainTimeoutMs: 500, reconnectTimeWaitMs: 100 });
    const drawn = busDrawnRuns(bus, ADAPTER, warn, { readWaitMs: 300, writeWaitMs: 100 });
    const { ops, texts, surface } = platform();
    const p = new Presenter(new MessageLayout(surface("only")), { files: {} as FileSource, maxBytes: 1000, log: warn, editIntervalMs: 10, drawn });
    try {
      await p.handle("C1", started("w0"));
      expect(await drawn.read("w0")).toEqual({ progress: { progressId: "1" } }); // the bucket works
      await own.stop(); // and now there is no NATS at all

      const t0 = Date.now();
      await p.handle("C1", ended("w0", "answered while NATS is away"));
      await p.handle("C1", started("w1"));
      await p.handle("C1", ended("w1", "another one"));
      // A run met mid-run: its record cannot be read, so its answer is posted as before the bucket.
      await p.handle("C1", ended("w2", "met at its end"));
      const took = Date.now() - t0;
      expect(texts.get("1")).toMatch(/^answered while NATS is away/);
      expect(texts.get("2")).toMatch(/^another one/);
      expect(ops.filter((o) => o.op === "post").map((o) => o.text)).toEqual([expect.stringContaining("Working"), expect.stringContaining("Working"), expect.stringMatching(/^met at its end/)]);
      // Each write waited 100 ms at most, the read 300 ms.
      expect(took).toBeLessThan(2000);
      expect(lines.join("")).toMatch(/reading what an earlier process drew of run w2 took over 300 ms/);
      const deadline = Date.now() + 15_000;
      while (!/could not record run w1/.test(lines.join("")) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(lines.join("")).toMatch(/could not record run w1's platform messages/);
    } finally {
      await p.close();
      await bus.drain().catch(() => {});
      await own.stop().catch(() => {});
    }
  }, 30_000);
});
