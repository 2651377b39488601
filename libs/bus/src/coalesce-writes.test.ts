import { describe, expect, it } from "@jest/globals";
import type { Socket } from "node:net";
import type { Bus } from "./bus.js";
import { withNextWrite } from "./coalesce-writes.js";
import { busesOnTestNats, waitFor } from "./test-support/helpers.js";
import { connectionOf } from "./bus.js";

const { buses, server } = busesOnTestNats();

/** Counts the writes that reach the bus's socket (one per syscall: write or writev). */
function countWrites(bus: Bus): () => number {
  const socket = (connectionOf(bus).nc as unknown as { protocol: { transport: { socket: Socket & Record<string, unknown> } } }).protocol.transport.socket;
  let writes = 0;
  for (const name of ["_write", "_writev"] as const) {
    const original = socket[name] as (...a: unknown[]) => unknown;
    socket[name] = (...a: unknown[]) => {
      writes++;
      return original.apply(socket, a);
    };
  }
  return () => writes;
}

/** Publishes `n` messages, each from its own callback (a microtask checkpoint between each), all in one loop turn. */
function publishFromCallbacks(bus: Bus, subject: string, n: number): void {
  for (let i = 0; i < n; i++) setImmediate(() => connectionOf(bus).nc.publish(subject, String(i)));
}

describe("coalesced socket writes", () => {
  it("sends what the callbacks of one event-loop turn publish in one write, in order", async () => {
    const bus = await buses.open();
    const reader = await buses.open();
    const got: string[] = [];
    const sub = reader.nc.subscribe("coalesce.a", { callback: (_err, m) => got.push(m.string()) });
    await reader.nc.flush();
    const writes = countWrites(bus);
    publishFromCallbacks(bus, "coalesce.a", 20);
    await waitFor(() => got.length === 20, 5000, "20 messages");
    expect(got).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    // Without corking each callback's flush would be a write of its own.
    expect(writes()).toBeLessThanOrEqual(2);
    sub.unsubscribe();
  });

  it("keeps JetStream publishes, their acks and a reconnect working", async () => {
    const bus = await buses.open();
    await bus.provision();
    const subject = bus.subjects.channel("in", { adapter: "cli", channelId: "coalesce" });
    const acks = await Promise.all(Array.from({ length: 30 }, (_, i) => bus.publish(subject, { i }, `m-${i}`)));
    expect(acks.map((a) => a.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    const nats = server();
    if (!nats.restart) return;
    await nats.restart();
    const again = await bus.publish(subject, { i: 30 }, "m-30", { retryForMs: 10_000 });
    expect(again.seq).toBe(31);
    const writes = countWrites(bus); // the new connection's socket
    const got: string[] = [];
    const sub = connectionOf(bus).nc.subscribe("coalesce.b", { callback: (_err, m) => got.push(m.string()) });
    await connectionOf(bus).nc.flush();
    publishFromCallbacks(bus, "coalesce.b", 10);
    await waitFor(() => got.length === 10, 5000, "10 messages after the reconnect");
    expect(writes()).toBeLessThanOrEqual(3);
    sub.unsubscribe();
  });

  it("sends what waits for the next write with that write, or after its delay when nothing is written", async () => {
    const bus = await buses.open();
    const reader = await buses.open();
    const got: string[] = [];
    const sub = reader.nc.subscribe("ride.>", { callback: (_err, m) => got.push(m.subject) });
    await reader.nc.flush();
    await connectionOf(bus).nc.flush();
    await new Promise((r) => setImmediate(r)); // the flush's own write is out
    const writes = countWrites(bus);
    withNextWrite(connectionOf(bus).nc, () => connectionOf(bus).nc.publish("ride.ack", ""), 60_000);
    await new Promise((r) => setImmediate(r));
    expect(writes()).toBe(0);
    connectionOf(bus).nc.publish("ride.next", "");
    await waitFor(() => got.length === 2, 5000, "both messages");
    expect(got.sort()).toEqual(["ride.ack", "ride.next"]);
    expect(writes()).toBe(1);
    // Nothing else written: it goes out on its own after the delay.
    withNextWrite(connectionOf(bus).nc, () => connectionOf(bus).nc.publish("ride.late", ""), 50);
    await waitFor(() => got.includes("ride.late"), 5000, "the late one");
    sub.unsubscribe();
  });
});
