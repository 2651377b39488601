import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Bus, type FileSource } from "@mom/bus";
import type { OutboundEvent, OutboundEventBody, Receipt } from "@mom/contracts";
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
  op: "post" | "edit" | "delete" | "upload" | "prompt" | "closePrompt";
  by: string;
  id?: string;
  text?: string;
}

/** One chat platform the processes share: every call, by whom, and each message's current text. */
function platform() {
  const ops: Op[] = [];
  const texts = new Map<string, string>();
  let n = 0;
  const surface = (by: string): ChatSurface => ({
    dialect: plainDialect(500),
    async post(_channel, text) {
      const id = String(++n);
      ops.push({ op: "post", by, id, text });
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

  it("the second one edits the first one's progress message into the answer and posts nothing", async () => {
    const ns = uniqueNamespace();
    const { ops, texts, surface } = platform();
    const receipts: Receipt[] = [];
    const first = await processOf("first", ns, surface("first"), receipts);
    expect(await first.draw(started("r1"))).toBe(true);
    expect(await first.draw(toolStart("r1"))).toBe(true);
    expect(ops).toEqual([{ op: "post", by: "first", id: "1", text: expect.stringContaining("Working") }]);
    // The first process dies here (nothing of it runs again); the events after the start go to the second.
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
    });
    const presenter = async (name: string) => {
      const bus = await Bus.connect({ url: nats.url, name, namespace: ns, logger: log, drainTimeoutMs: 2000 });
      buses.push(bus);
      return new Presenter(new ThreadedLayout(threads(name), log), { files: {} as FileSource, maxBytes: 1000, log, editIntervalMs: 10, drawn: busDrawnRuns(bus, ADAPTER, log) });
    };
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
