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

  async function observer(bucket: string, leaseMs = LEASE): Promise<{ m: Membership; kv: KV; clock: { t: number } }> {
    const kv = await bus.keyValue(`${runnersBucket(nats.namespace)}-${bucket}`, { ttlMs: 60_000 });
    const clock = { t: 1_000_000 };
    const m = new Membership({ kv, id: "obs", leaseMs, load: () => 0, log, now: () => clock.t });
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
    await m.rewatch(); // what a watch found behind gets: every current heartbeat comes again
    expect(m.isAlive("r1")).toBe(false);
    await beat(kv, "r1"); // a real new heartbeat is
    await until(() => m.isAlive("r1"));
    await m.stop();
  });

  it("time this process was deaf does not count against others, but does not revive the dead either", async () => {
    // A lease long enough that none of the observer's own heartbeats (every lease/8 of real time)
    // falls within the test: one that timed out on a busy machine made it deaf for reasons of its
    // own from the fake clock's start, and rightly forgave "dead" that time (npm test, once).
    const lease = 40_000;
    const { m, kv, clock } = await observer("deaf", lease);
    await beat(kv, "dead");
    await m.start();
    clock.t += lease + 1; // "dead" has been silent for a lease before the disconnect
    await beat(kv, "alive");
    await until(() => m.isAlive("alive"));
    clock.t += lease - 1000; // "alive" was heard a second less than a lease before the disconnect
    m.deaf();
    clock.t += 60_000; // a minute without hearing anything
    m.deaf(); // a second notice of the same outage changes nothing
    expect(m.isAlive("alive")).toBe(true); // while deaf, silence does not count
    m.hear();
    expect(m.isAlive("alive")).toBe(true); // 1 s of its lease left
    expect(m.isAlive("dead")).toBe(false);
    clock.t += 1001;
    expect(m.isAlive("alive")).toBe(false);
    m.hear(); // not deaf: nothing to forgive
    expect(m.isAlive("alive")).toBe(false);
    await m.stop();
  });

  it("a watch that silently stopped (its server died) is found behind by its own heartbeat and set up again", async () => {
    const real = await bus.keyValue(`${runnersBucket(nats.namespace)}-silent`, { ttlMs: 60_000 });
    // The outermost edge only: the watches made so far go quiet, as one does whose consumer died
    // with its server (nats.js notices only after two missed idle heartbeats, 10 s).
    let generation = 0;
    let quietBefore = 0;
    const kv = new Proxy(real, {
      get: (t, p) =>
        p === "watch"
          ? async (...a: Parameters<KV["watch"]>) => {
              const mine = ++generation;
              const iter = await t.watch(...a);
              return Object.assign(Object.create(iter), {
                stop: () => iter.stop(),
                async *[Symbol.asyncIterator]() {
                  for await (const e of iter) if (mine >= quietBefore) yield e;
                },
              });
            }
          : Reflect.get(t, p),
    }) as KV;
    const m = new Membership({ kv, id: "obs", leaseMs: LEASE, load: () => 0, log });
    await m.start();
    expect(m.vouched).toBe(true);
    quietBefore = generation + 1;
    const quietAt = Date.now();
    while (generation < quietBefore && Date.now() - quietAt < 8000) {
      await m.check();
      await new Promise((r) => setTimeout(r, 100));
    }
    // Found behind within about lease/5 after its first unreturned heartbeat, and set up again.
    expect(generation).toBe(quietBefore);
    expect(Date.now() - quietAt).toBeLessThan(3000);
    expect(m.vouched).toBe(true);
    await beat(real, "r2");
    await until(() => m.isAlive("r2"));
    await m.stop();
  });

  it("while its own heartbeats cannot land, nobody's silence counts against them", async () => {
    const real = await bus.keyValue(`${runnersBucket(nats.namespace)}-noland`, { ttlMs: 60_000 });
    let failing = false;
    // The outermost edge only: puts fail as they do while the bucket elects a leader.
    const kv = new Proxy(real, {
      get: (t, p) => (p === "put" ? (...a: Parameters<KV["put"]>) => (failing ? Promise.reject(new Error("no responders")) : t.put(...a)) : Reflect.get(t, p)),
    }) as KV;
    const clock = { t: Date.now() };
    const m = new Membership({ kv, id: "obs", leaseMs: LEASE, load: () => 0, log, now: () => clock.t });
    await beat(real, "r2");
    await m.start();
    await until(() => m.isAlive("r2"));
    failing = true;
    clock.t += 100;
    await (m as unknown as { beat(): Promise<boolean> }).beat();
    expect(m.vouched).toBe(false);
    clock.t += LEASE * 3; // an election longer than a lease: nobody could beat
    expect(m.isAlive("r2")).toBe(true);
    failing = false;
    await (m as unknown as { beat(): Promise<boolean> }).beat();
    expect(m.isAlive("r2")).toBe(true); // the time without landing heartbeats is forgiven
    clock.t += LEASE;
    expect(m.isAlive("r2")).toBe(false); // and silence after it counts again
    await m.stop();
  });

  it("a runner starting after another died does not take the dead one's last heartbeat as news", async () => {
    const kv = await bus.keyValue(`${runnersBucket(nats.namespace)}-late`, { ttlMs: 60_000 });
    await beat(kv, "died");
    await new Promise((r) => setTimeout(r, 1200));
    await beat(kv, "alive");
    // A lease of 1 s: "died" was last heard 1.2 s before this runner started, "alive" just now.
    const m = new Membership({ kv, id: "late", leaseMs: 1000, load: () => 0, log });
    await m.start();
    expect(m.isAlive("died")).toBe(false);
    expect(m.isAlive("alive")).toBe(true);
    expect(m.assignable().map((r) => r.id).sort()).toEqual(["alive", "late"]);
    await m.stop();
  });
});
