import { describe, expect, it } from "@jest/globals";
import { metrics } from "@mom/observability";
import { spawnNatsServer } from "@mom/testing";
import Type from "typebox";
import type { Delivery } from "./consume-types.js";
import { busesOnTestNats, collectDeadLetters, waitFor } from "./test-support/helpers.js";

const Item = Type.Object({ n: Type.Number() });
const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

// Spawned (never NATS_URL): the readiness test stops and restarts this server.
const { buses, server } = busesOnTestNats(spawnNatsServer);

const counter = async (c: { get(): Promise<{ values: Array<{ value: number; labels: Record<string, unknown> }> }> }, labels: Record<string, string>) =>
  (await c.get()).values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((n, v) => n + v.value, 0);

describe("trace context on the bus", () => {
  it("carries a publisher's traceparent to durable consumers and followers", async () => {
    const bus = await buses.open();
    await bus.provision();
    const subject = bus.subjects.channel("in", { adapter: "cli", channelId: "local" });
    const consumed: Delivery<{ n: number }>[] = [];
    const followed: Delivery<{ n: number }>[] = [];
    await bus.consume({ stream: "IN", durable: "t", filterSubject: subject, schema: Item, stage: "test", handler: async (d) => void consumed.push(d) });
    const f = bus.follow({ stream: "IN", filterSubject: subject, from: 1, schema: Item, handler: (d) => void followed.push(d) });
    await bus.publish(subject, { n: 1 }, "m1", { traceparent: TRACEPARENT });
    await bus.publish(subject, { n: 2 }, "m2");
    await waitFor(() => consumed.length === 2 && followed.length === 2);
    f.stop();
    expect(consumed.map((d) => d.traceparent)).toEqual([TRACEPARENT, undefined]);
    expect(followed.map((d) => d.traceparent)).toEqual([TRACEPARENT, undefined]);
  });
});

describe("bus metrics", () => {
  it("counts redeliveries per consumer and dead letters per stage", async () => {
    const bus = await buses.open();
    await bus.provision();
    const subject = bus.subjects.channel("in", { adapter: "cli", channelId: "x" });
    const stream = bus.subjects.stream("IN");
    const before = { redelivered: await counter(metrics.redeliveries, { stream, consumer: "flaky" }), dead: await counter(metrics.deadLetters, { stage: "obs-flaky" }) };
    const { letters } = await collectDeadLetters(bus, "obs-flaky");
    await bus.consume({
      stream: "IN",
      durable: "flaky",
      filterSubject: subject,
      schema: Item,
      stage: "obs-flaky",
      maxDeliver: 2,
      handler: async () => {
        throw new Error("always fails");
      },
    });
    await bus.publish(subject, { n: 1 }, "p1");
    await waitFor(() => letters.length === 1, 10_000, "the dead letter");
    expect(await counter(metrics.redeliveries, { stream, consumer: "flaky" })).toBe(before.redelivered + 1);
    expect(await counter(metrics.deadLetters, { stage: "obs-flaky" })).toBe(before.dead + 1);
  });
});

describe("readinessProblem", () => {
  it("names a lost connection while NATS is down and clears once it is back and the consumer pulls again", async () => {
    const bus = await buses.open({ reconnectTimeWaitMs: 100 });
    await bus.provision();
    await bus.consume({ stream: "IN", durable: "ready", filterSubject: bus.subjects.wildcard("in"), schema: Item, stage: "test", pullExpiresMs: 1000, handler: async () => {} });
    expect(bus.readinessProblem()).toBeUndefined();
    const restarted = server().restart(1500);
    await waitFor(() => bus.readinessProblem() !== undefined, 5000, "readiness to drop");
    expect(bus.readinessProblem()).toMatch(/NATS disconnected|not bound/);
    await restarted;
    await waitFor(() => bus.readinessProblem() === undefined, 15_000, "readiness to come back");
  });
});
