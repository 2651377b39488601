import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Bus, type KV } from "@mom/bus";
import { runnersBucket } from "@mom/contracts";
import { startTestNats, type TestNats } from "@mom/testing";
import { pino } from "pino";
import { Membership } from "./membership.js";

const LEASE = 4000;
const log = pino({ level: "silent" });

async function until(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error("condition not met within 5 s");
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("Membership (heartbeats on a real NATS KV bucket, this process's clock moved by hand)", () => {
  let nats: TestNats;
  let bus: Bus;
  beforeAll(async () => {
    nats = await startTestNats();
    bus = await Bus.connect({ url: nats.url, name: "membership-test", namespace: nats.namespace, logger: log });
  });
  afterAll(async () => {
    await bus?.drain();
    await nats?.stop();
  });

  async function observer(bucket: string): Promise<{ m: Membership; kv: KV; clock: { t: number } }> {
    const kv = await bus.keyValue(`${runnersBucket(nats.namespace)}-${bucket}`, { ttlMs: 60_000 });
    const clock = { t: 1_000_000 };
    const m = new Membership({ kv, id: "obs", leaseMs: LEASE, load: () => 0, log, now: () => clock.t });
    return { m, kv, clock };
  }
  const beat = (kv: KV, id: string) => kv.put(id, JSON.stringify({ id, channels: 0, startedAt: new Date().toISOString() }));

  it("a heartbeat replayed by a new watch is not news: a dead runner stays dead", async () => {
    const { m, kv, clock } = await observer("replay");
    await beat(kv, "r1");
    await m.start();
    expect(m.isAlive("r1")).toBe(true);
    clock.t += LEASE + 1;
    expect(m.isAlive("r1")).toBe(false);
    await m.watch(); // what a reconnect does: every current heartbeat comes again
    expect(m.isAlive("r1")).toBe(false);
    await beat(kv, "r1"); // a real new heartbeat is
    await until(() => m.isAlive("r1"));
    await m.stop();
  });

  it("time this process was deaf does not count against others, but does not revive the dead either", async () => {
    const { m, kv, clock } = await observer("deaf");
    await beat(kv, "dead");
    await m.start();
    clock.t += LEASE + 1; // "dead" has been silent for a lease before the disconnect
    await beat(kv, "alive");
    await until(() => m.isAlive("alive"));
    clock.t += LEASE - 1000; // "alive" was heard 3 s before the disconnect
    m.deaf();
    clock.t += 60_000; // a minute without hearing anything
    m.deaf(); // a second notice of the same outage changes nothing
    m.forgive();
    expect(m.isAlive("alive")).toBe(true); // 3 s of its lease used, 1 s left
    expect(m.isAlive("dead")).toBe(false);
    clock.t += 1001;
    expect(m.isAlive("alive")).toBe(false);
    m.forgive(); // not deaf: nothing to forgive
    expect(m.isAlive("alive")).toBe(false);
    await m.stop();
  });
});
