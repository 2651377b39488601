import { describe, expect, it } from "@jest/globals";
import Type from "typebox";
import type { Bus } from "./bus.js";
import type { ConsumeOptions, Delivery } from "./consume-types.js";
import { busesOnTestNats, collectDeadLetters, type LogCapture, sleep, waitFor } from "./test-support/helpers.js";
import { connectionOf } from "./bus.js";

const Item = Type.Object({ n: Type.Number() }, { additionalProperties: false });
type Item = { n: number };

const { buses } = busesOnTestNats();
type TestBus = Bus & { logs: LogCapture };

async function setup(): Promise<{ bus: TestBus; subject: string }> {
  const bus = await buses.open();
  await bus.provision();
  return { bus, subject: bus.subjects.channel("in", { adapter: "slack-acme", channelId: "C0A34FL8PMH" }) };
}

function consumeItems(bus: Bus, handler: (d: Delivery<Item>) => Promise<void>, extra: Partial<ConsumeOptions<typeof Item>> = {}) {
  return bus.consume({
    stream: "IN",
    durable: "runner",
    filterSubject: bus.subjects.wildcard("in"),
    schema: Item,
    stage: "agent-runner",
    handler,
    ...extra,
  });
}

async function ackFloor(bus: Bus, durable = "runner"): Promise<number> {
  const info = await connectionOf(bus).jsm.consumers.info(bus.subjects.stream("IN"), durable);
  return info.ack_floor.stream_seq;
}

describe("consume", () => {
  it("delivers typed, validated messages with their metadata and acks them", async () => {
    const { bus } = await setup();
    const subject = bus.subjects.channel("in", { adapter: "slack-acme", channelId: "C1.x y*" });
    await bus.publish(subject, { n: 1 }, "slack:1");
    const got: Delivery<Item>[] = [];
    await consumeItems(bus, async (d) => void got.push(d));
    await waitFor(() => got.length === 1);
    expect(got[0]).toEqual({
      subject,
      data: { n: 1 },
      msgId: "slack:1",
      streamSeq: 1,
      deliveryCount: 1,
      redelivered: false,
      channel: { adapter: "slack-acme", channelId: "C1.x y*" },
    });
    await waitFor(async () => (await ackFloor(bus)) === 1, 3000, "ack");
  });

  it("with ackWithNextWrite acks every handled message, with a later write or on its own", async () => {
    const { bus, subject } = await setup();
    const observer = await buses.open({ namespace: bus.subjects.namespace });
    for (let n = 1; n <= 3; n++) await bus.publish(subject, { n }, `m-${n}`);
    const got: number[] = [];
    // A pull for 8 stays open after these: no pull request of the consumer's carries the acks.
    await consumeItems(bus, async (d) => void got.push(d.data.n), { ackWithNextWrite: true, maxInFlight: 8 });
    await waitFor(() => got.length === 3);
    await waitFor(async () => (await ackFloor(observer)) === 3, 5000, "acks of 1-3, sent after their delay");
    await bus.publish(subject, { n: 4 }, "m-4");
    await waitFor(() => got.length === 4);
    await connectionOf(bus).nc.flush(); // a write of the connection's, which the waiting ack rides with
    await waitFor(async () => (await ackFloor(observer)) === 4, 5000, "ack of 4");
  });

  it("leaves channel undefined for a subject that is not a channel subject", async () => {
    const { bus } = await setup();
    const got: Delivery<Item>[] = [];
    await bus.consume({ stream: "DLQ", durable: "d", filterSubject: bus.subjects.wildcard("dlq"), schema: Item, stage: "t", handler: async (d) => void got.push(d) });
    await bus.publish(bus.subjects.dlq("x"), { n: 2 }, "id");
    await waitFor(() => got.length === 1);
    expect(got[0]!.channel).toBeUndefined();
  });

  it("dead-letters invalid JSON and schema mismatches, acks them, and keeps serving", async () => {
    const { bus, subject } = await setup();
    const { letters } = await collectDeadLetters(bus, "agent-runner");
    const got: number[] = [];
    await consumeItems(bus, async (d) => void got.push(d.data.n));
    await connectionOf(bus).js.publish(subject, "{not json", { msgID: "bad-json" });
    await bus.publish(subject, { n: "one" }, "bad-schema");
    await bus.publish(subject, { n: 3 }, "good");
    await waitFor(() => got.length === 1 && letters.length === 2, 5000, "good message and two dead letters");
    expect(got).toEqual([3]);
    expect(letters.map((l) => l.data.msgId)).toEqual(["bad-json", "bad-schema"]);
    expect(letters[0]!.data).toMatchObject({ stage: "agent-runner", subject, payload: "{not json", payloadEncoding: "utf8" });
    expect(letters[0]!.data.reason).toMatch(/^invalid JSON/);
    expect(letters[1]!.data.reason).toMatch(/\/n/);
    await waitFor(async () => (await ackFloor(bus)) === 3, 3000, "all three acked");
    const warn = bus.logs.lines.find((l) => l.level === 40 && l.msgId === "bad-schema");
    expect(warn).toMatchObject({ stage: "agent-runner", subject });
  });

  it("naks a failed handler with backoff and acks the redelivery", async () => {
    const { bus, subject } = await setup();
    const seen: Delivery<Item>[] = [];
    await consumeItems(bus, async (d) => {
      seen.push(d);
      if (d.deliveryCount === 1) throw new Error("flaky");
    });
    const t0 = Date.now();
    await bus.publish(subject, { n: 1 }, "m1");
    await waitFor(() => seen.length === 2, 5000, "redelivery");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(200);
    expect(seen[1]).toMatchObject({ deliveryCount: 2, redelivered: true, msgId: "m1", streamSeq: 1 });
    await waitFor(async () => (await ackFloor(bus)) === 1, 3000, "ack");
    const warn = bus.logs.lines.find((l) => l.level === 40 && String(l.msg).includes("flaky"));
    expect(warn).toMatchObject({ subject, msgId: "m1", stage: "agent-runner", deliveryCount: 1 });
  });

  it("dead-letters and terminates after maxDeliver failures; later messages still flow", async () => {
    const { bus, subject } = await setup();
    const { letters } = await collectDeadLetters(bus, "agent-runner");
    const attempts: number[] = [];
    const ok: number[] = [];
    await consumeItems(
      bus,
      async (d) => {
        if (d.data.n === 1) {
          attempts.push(d.deliveryCount);
          throw new Error("boom");
        }
        ok.push(d.data.n);
      },
      { maxDeliver: 3, maxInFlight: 2 },
    );
    await bus.publish(subject, { n: 1 }, "poison");
    await bus.publish(subject, { n: 2 }, "fine");
    await waitFor(() => letters.length === 1, 5000, "dead letter");
    expect(letters[0]!.data).toMatchObject({ reason: "handler failed after 3 deliveries: boom", msgId: "poison", subject, payload: '{"n":1}' });
    expect(ok).toEqual([2]);
    await sleep(1200);
    expect(attempts).toEqual([1, 2, 3]);
    await waitFor(async () => (await ackFloor(bus)) === 2, 3000, "poison terminated");
    await bus.publish(subject, { n: 4 }, "after");
    await waitFor(() => ok.length === 2);
  });

  it("runs strictly sequentially by default, in delivery order", async () => {
    const { bus, subject } = await setup();
    for (let n = 1; n <= 6; n++) await bus.publish(subject, { n }, `m${n}`);
    let running = 0;
    let maxRunning = 0;
    const order: number[] = [];
    await consumeItems(bus, async (d) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      order.push(d.data.n);
      await sleep(15);
      running--;
    });
    await waitFor(() => order.length === 6);
    expect(order).toEqual([1, 2, 3, 4, 5, 6]);
    expect(maxRunning).toBe(1);
  });

  it("runs up to maxInFlight handlers at once, started in delivery order, and never holds more", async () => {
    const { bus, subject } = await setup();
    for (let n = 1; n <= 9; n++) await bus.publish(subject, { n }, `m${n}`);
    let running = 0;
    let maxRunning = 0;
    let maxHeld = 0;
    const started: number[] = [];
    await consumeItems(
      bus,
      async (d) => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        started.push(d.data.n);
        // Asked a little into the handler: the server takes an ack in a moment after it was sent
        // (with the next pull in the same write, it once still counted the acked message), while
        // a message fetched ahead of a free slot would still be pending then.
        await sleep(20);
        const info = await connectionOf(bus).jsm.consumers.info(bus.subjects.stream("IN"), "runner");
        maxHeld = Math.max(maxHeld, info.num_ack_pending);
        await sleep(40);
        running--;
      },
      { maxInFlight: 3 },
    );
    await waitFor(() => started.length === 9);
    expect(started).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(maxRunning).toBe(3);
    expect(maxHeld).toBeLessThanOrEqual(3);
  });

  it("keeps a long handler alive with working() so it is not redelivered", async () => {
    const { bus, subject } = await setup();
    const deliveries: string[] = [];
    // A second free slot keeps a pull open, so an expired ack timer would redeliver at once.
    await consumeItems(
      bus,
      async (d) => {
        deliveries.push(`${d.msgId}#${d.deliveryCount}`);
        if (d.data.n === 1) await sleep(2000);
      },
      { ackWaitMs: 600, maxInFlight: 2 },
    );
    await bus.publish(subject, { n: 1 }, "long");
    await waitFor(() => deliveries.length === 1);
    await bus.publish(subject, { n: 2 }, "short");
    await waitFor(async () => (await ackFloor(bus)) === 2, 5000, "both acked");
    await sleep(700);
    expect(deliveries).toEqual(["long#1", "short#1"]);
  });

  it("deliver 'new' skips earlier messages; 'all' (default) replays them", async () => {
    const { bus, subject } = await setup();
    await bus.publish(subject, { n: 1 }, "old");
    const fresh: number[] = [];
    const all: number[] = [];
    await consumeItems(bus, async (d) => void fresh.push(d.data.n), { durable: "fresh", deliver: "new" });
    await consumeItems(bus, async (d) => void all.push(d.data.n), { durable: "all" });
    await bus.publish(subject, { n: 2 }, "new");
    await waitFor(() => fresh.length === 1 && all.length === 2);
    expect(fresh).toEqual([2]);
    expect(all).toEqual([1, 2]);
  });

  it("filters by subject and updates an existing durable idempotently", async () => {
    const { bus } = await setup();
    const a = bus.subjects.channel("in", { adapter: "discord", channelId: "1" });
    const b = bus.subjects.channel("in", { adapter: "slack-acme", channelId: "C1" });
    const got: string[] = [];
    const c1 = await consumeItems(bus, async (d) => void got.push(d.subject), { filterSubject: bus.subjects.wildcard("in", "discord"), ackWaitMs: 5000 });
    await bus.publish(b, { n: 1 }, "b1");
    await bus.publish(a, { n: 2 }, "a1");
    await waitFor(() => got.length === 1);
    expect(got).toEqual([a]);
    await c1.stop();
    await consumeItems(bus, async (d) => void got.push(d.subject), { filterSubject: bus.subjects.wildcard("in", "discord"), ackWaitMs: 9000, maxDeliver: 7 });
    const info = await connectionOf(bus).jsm.consumers.info(bus.subjects.stream("IN"), "runner");
    expect(info.config.ack_wait).toBe(9000 * 1_000_000);
    expect(info.config.max_deliver).toBe(7);
  });

  it("resumes a durable where it stopped; stop waits for the in-flight handler", async () => {
    const { bus, subject } = await setup();
    const got: number[] = [];
    let finished = false;
    const c = await consumeItems(bus, async (d) => {
      got.push(d.data.n);
      await sleep(300);
      finished = true;
    });
    await bus.publish(subject, { n: 1 }, "m1");
    await waitFor(() => got.length === 1);
    await c.stop();
    expect(finished).toBe(true);
    await bus.publish(subject, { n: 2 }, "m2");
    await sleep(100);
    expect(got).toEqual([1]);
    await consumeItems(bus, async (d) => void got.push(d.data.n));
    await waitFor(() => got.length === 2, 3000);
    expect(got).toEqual([1, 2]);
  });

  it("fails clearly when the stream was never provisioned", async () => {
    const bus = await buses.open();
    await expect(consumeItems(bus, async () => {})).rejects.toThrow(/provision/);
  });

  it("drain stops consumptions, waits for handlers, then closes", async () => {
    const { bus, subject } = await setup();
    let done = false;
    let started = false;
    await consumeItems(bus, async () => {
      started = true;
      await sleep(300);
      done = true;
    });
    await bus.publish(subject, { n: 1 }, "m1");
    await waitFor(() => started);
    await bus.drain();
    expect(done).toBe(true);
    expect(connectionOf(bus).nc.isClosed()).toBe(true);
  });

  it("with keepOrderThroughLostPulls, what a process that died held comes before anything newer", async () => {
    const { bus, subject } = await setup();
    const opts = { ackWaitMs: 1000, maxInFlight: 8, keepOrderThroughLostPulls: true } as const;
    // A process takes 1-3 and dies before acking them: the server holds them for their ack wait.
    const dead = await buses.open({ namespace: bus.subjects.namespace });
    const held: number[] = [];
    await consumeItems(dead, (d) => (held.push(d.data.n), new Promise<void>(() => {})), opts);
    for (let n = 1; n <= 3; n++) await bus.publish(subject, { n }, `m-${n}`);
    await waitFor(() => held.length === 3);
    await connectionOf(dead).nc.close();
    for (let n = 4; n <= 5; n++) await bus.publish(subject, { n }, `m-${n}`);
    // Pulling at once would get 4 and 5 first (1-3 come back only after the ack wait); the
    // consumption waits for them instead, and the server redelivers them ahead of the new ones.
    const got: number[] = [];
    await consumeItems(bus, async (d) => void got.push(d.data.n), opts);
    await waitFor(() => got.length === 5, 8000, "all five");
    expect(got).toEqual([1, 2, 3, 4, 5]);
    expect((bus as TestBus).logs.lines.some((l) => String(l.msg).startsWith("deliveries this process never got"))).toBe(true);
  });
});
