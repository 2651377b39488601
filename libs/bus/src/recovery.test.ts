import { describe, expect, it } from "@jest/globals";
import { spawnNatsServer } from "@mom/testing";
import Type from "typebox";
import type { Bus } from "./bus.js";
import { busesOnTestNats, sleep, waitFor } from "./test-support/helpers.js";
import { connectionOf } from "./bus.js";

const Item = Type.Object({ n: Type.Number() });

// Spawned (never NATS_URL): the restart test kills and restarts this server.
const { buses, server } = busesOnTestNats(spawnNatsServer);

async function consumer(bus: Bus, got: number[]) {
  const subject = bus.subjects.channel("in", { adapter: "cli", channelId: "local" });
  await bus.consume({
    stream: "IN",
    durable: "runner",
    filterSubject: bus.subjects.wildcard("in"),
    schema: Item,
    stage: "agent-runner",
    pullExpiresMs: 2000,
    handler: async (d) => void got.push(d.data.n),
  });
  return subject;
}

describe("recovery", () => {
  it("re-creates a deleted durable from where it stopped", async () => {
    const bus = await buses.open();
    await bus.provision();
    const got: number[] = [];
    const subject = await consumer(bus, got);
    await bus.publish(subject, { n: 1 }, "m1");
    await waitFor(() => got.length === 1);
    await waitFor(async () => (await connectionOf(bus).jsm.consumers.info(bus.subjects.stream("IN"), "runner")).ack_floor.stream_seq === 1);
    await connectionOf(bus).jsm.consumers.delete(bus.subjects.stream("IN"), "runner");
    await bus.publish(subject, { n: 2 }, "m2");
    await waitFor(() => got.length >= 2, 8000, "delivery after the durable was deleted");
    await sleep(200);
    expect(got).toEqual([1, 2]);
  });

  it("re-provisions a vanished stream and keeps consuming", async () => {
    const bus = await buses.open();
    await bus.provision();
    const got: number[] = [];
    const subject = await consumer(bus, got);
    await bus.publish(subject, { n: 1 }, "m1");
    await waitFor(() => got.length === 1);
    await connectionOf(bus).jsm.streams.delete(bus.subjects.stream("IN"));
    await waitFor(async () => (await connectionOf(bus).jsm.streams.names().next()).includes(bus.subjects.stream("IN")), 8000, "stream re-created");
    await bus.publish(subject, { n: 2 }, "m2", { retryForMs: 8000, timeoutMs: 1000 });
    await waitFor(() => got.length === 2, 8000, "delivery after the stream came back");
    expect(got).toEqual([1, 2]);
  });

  it("notices a stream re-created by someone else and reads it from the start", async () => {
    const bus = await buses.open();
    await bus.provision();
    const got: number[] = [];
    const subject = await consumer(bus, got);
    for (let n = 1; n <= 3; n++) await bus.publish(subject, { n }, `m${n}`);
    await waitFor(() => got.length === 3);
    const other = await buses.open({ namespace: bus.subjects.namespace });
    await other.jsm.streams.delete(other.subjects.stream("IN"));
    await other.provision();
    await other.publish(subject, { n: 10 }, "m10");
    await other.publish(subject, { n: 11 }, "m11");
    await waitFor(() => got.length === 5, 8000, "messages of the re-created stream");
    expect(got).toEqual([1, 2, 3, 10, 11]);
  });

  it("survives a NATS server restart: messages keep flowing", async () => {
    const bus = await buses.open({ reconnectTimeWaitMs: 200 });
    await bus.provision();
    const got: number[] = [];
    const subject = await consumer(bus, got);
    await bus.publish(subject, { n: 1 }, "m1");
    await waitFor(() => got.length === 1);
    await waitFor(async () => (await connectionOf(bus).jsm.consumers.info(bus.subjects.stream("IN"), "runner")).ack_floor.stream_seq === 1);

    await server().restart!();
    // Published while the client is still reconnecting: the bus retries with the same msg id.
    await bus.publish(subject, { n: 2 }, "m2", { retryForMs: 8000, timeoutMs: 1000 });
    await waitFor(() => got.length === 2, 8000, "delivery after the restart");
    await bus.publish(subject, { n: 3 }, "m3");
    await waitFor(() => got.length === 3, 3000);
    expect(got).toEqual([1, 2, 3]);
    expect(bus.logs.lines.some((l) => l.msg === "NATS reconnected")).toBe(true);
  });
});
