// The prod overlay gives every service one URL, `nats://nats:4222`: a Service, so one address
// that leads to one node. Failover then rests on nats.js learning the other nodes from the
// server's INFO (`connect_urls`); here the Bus is given node 0's URL alone and node 0 dies.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Bus, type KV } from "@mom/bus";
import { spawnNatsCluster, type TestNatsCluster } from "@mom/testing";
import { pino } from "pino";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Puts key "k" again and again until it lands (an election of the bucket's leader), at most 30 s after `since`. */
async function putWithin30s(kv: KV, value: string, since: number): Promise<void> {
  for (;;) {
    try {
      await kv.put("k", value);
      return;
    } catch (err) {
      if (Date.now() - since > 30_000) throw err;
      await sleep(100);
    }
  }
}

describe("a Bus given one node's URL (what a Service address gives)", () => {
  let cluster: TestNatsCluster;
  let bus: Bus;
  beforeAll(async () => {
    cluster = await spawnNatsCluster(3);
    bus = await Bus.connect({
      url: cluster.nodes[0]!.url,
      name: "service-url-test",
      namespace: cluster.namespace,
      logger: pino({ level: "silent" }),
      reconnectTimeWaitMs: 250,
      streams: { replicas: 3 },
    });
    await bus.provision();
  }, 60_000);
  afterAll(async () => {
    await bus?.drain().catch(() => {});
    await cluster?.stop();
  });

  it("learns the other nodes and reaches the cluster through them after kill -9 of its node", async () => {
    expect(bus.serverInfo?.server_name).toBe("n0");
    // The gossip that makes failover possible: every node's client URL, in the server's INFO.
    const others = cluster.nodes.slice(1).map((x) => `127.0.0.1:${x.port}`);
    expect(bus.serverInfo?.connect_urls ?? []).toEqual(expect.arrayContaining(others));
    const kv = await bus.keyValue("SERVICE_URL", { ttlMs: 60_000 });
    await kv.put("k", "before");
    const subject = bus.subjects.channel("in", { adapter: "cli", channelId: "svc" });
    await bus.publish(subject, { n: 1 }, "svc-1");

    await cluster.node("n0").kill9();
    const killed = Date.now();
    // Retried through the election of whatever n0 led.
    await bus.publish(subject, { n: 2 }, "svc-2", { retryForMs: 30_000, timeoutMs: 1000 });
    const published = Date.now() - killed;
    await putWithin30s(kv, "after", killed);
    expect(bus.serverInfo?.server_name).toMatch(/^n[12]$/);
    expect((await kv.get("k"))?.string()).toBe("after");
    expect(published).toBeLessThan(30_000);
    expect(bus.readinessProblem()).toBeUndefined();
  }, 60_000);

  it("moves to another node within seconds when its node hangs (SIGSTOP keeps the socket open)", async () => {
    await cluster.node("n0").start(); // killed by the test before
    // A restarted node on a loaded machine once took over 30 s to be current again (nats-server 2.10).
    await cluster.waitForHealth(60_000);
    const kv = await bus.keyValue("SERVICE_URL", { ttlMs: 60_000 });
    const on = bus.serverInfo!.server_name;
    const node = cluster.node(on);
    node.pause();
    const paused = Date.now();
    try {
      // nats.js's default ping (every 2 min) would leave it waiting on the frozen node that long.
      while (bus.serverInfo?.server_name === on) {
        if (Date.now() - paused > 15_000) throw new Error(`still on the hung node ${on} after 15 s`);
        await sleep(100);
      }
      const moved = Date.now() - paused;
      console.log(`moved off the hung node after ${moved} ms`);
      expect(moved).toBeLessThan(10_000);
      // A bucket the hung node led answers once its followers have elected another leader.
      await putWithin30s(kv, "while hung", paused);
    } finally {
      node.resume();
    }
  }, 120_000);

  it("gives up on a hung server within seconds when connecting (it accepts the TCP connection, then says nothing)", async () => {
    await cluster.waitForHealth(60_000);
    const node = cluster.nodes[2]!;
    node.pause();
    const started = Date.now();
    try {
      // nats.js's default would wait 20 s here, and as long on each reconnect attempt to that server.
      await expect(Bus.connect({ url: node.url, name: "hung-connect", namespace: cluster.namespace, logger: pino({ level: "silent" }) })).rejects.toThrow(/cannot connect to NATS/);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      node.resume();
    }
  }, 120_000);
});
