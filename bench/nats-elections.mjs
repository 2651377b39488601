#!/usr/bin/env node
// How long does a 3-node JetStream cluster refuse writes when a node fails? Production runs every
// stream and KV bucket at replicas 3 (nats.streams.replicas), and the runner's leases, heartbeats
// and retries have to outlast these stalls. Two writers (a KV put and a stream publish, each every
// 50 ms, through the project's Bus-provisioned R3 stream and bucket) run while one node is killed,
// frozen or stopped; the figure is the time from the fault to the first write issued after it
// that succeeds. See bench/README.md.
//
//   npm run bench -- elections
//   node bench/nats-elections.mjs [--samples 5] [--only kv-leader,meta-leader] [--timeout 500] [--out FILE] [--json]
import { writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(join(root, p));
const { spawnNatsCluster } = await dist("libs/testing/dist/index.js");
const { Bus } = await dist("libs/bus/dist/index.js");
// The NATS handles behind a Bus (not exported by the package: for tests and benches only).
const { connectionOf } = await dist("libs/bus/dist/bus.js");
const { jetstream } = await import("@nats-io/jetstream");
const { Kvm } = await import("@nats-io/kv");
const { pino } = await import("pino");

const SCENARIOS = {
  "kv-leader": "kill -9 of the KV bucket's leader",
  "stream-leader": "kill -9 of the stream's leader",
  "meta-leader": "kill -9 of the JetStream meta leader",
  "non-leader": "kill -9 of a node leading neither the stream nor the bucket",
  "sigstop-leader": "SIGSTOP of the KV bucket's leader, the writers connected to another node (SIGCONT once both got through)",
  "sigstop-client-node": "SIGSTOP of the node the writers are connected to (SIGCONT after --stop-cap s at most)",
  "sigterm-leader": "graceful stop (SIGTERM) of the KV bucket's leader",
  "lame-duck-leader": "lame duck mode (SIGUSR2, the manifests' preStop) of the KV bucket's leader; it exits ~30-40 s later",
};

const { values: o } = parseArgs({
  options: {
    samples: { type: "string", default: "5" },
    only: { type: "string" },
    timeout: { type: "string", default: "500" },
    "stop-cap": { type: "string", default: "20" },
    out: { type: "string" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (o.help) {
  console.log(`usage: node bench/nats-elections.mjs [--samples 5] [--only ${Object.keys(SCENARIOS).join(",")}] [--timeout 500] [--stop-cap 30] [--out FILE] [--json]`);
  process.exit(0);
}
const SAMPLES = Number(o.samples);
const TIMEOUT_MS = Number(o.timeout);
const STOP_CAP_MS = Number(o["stop-cap"]) * 1000;
const only = o.only ? o.only.split(",") : Object.keys(SCENARIOS);
for (const s of only) if (!(s in SCENARIOS)) (console.error(`unknown scenario ${s}; known: ${Object.keys(SCENARIOS).join(", ")}`), process.exit(2));
if (!(SAMPLES >= 1) || !(TIMEOUT_MS > 0)) (console.error("--samples and --timeout expect positive numbers"), process.exit(2));

const WRITE_EVERY_MS = 50;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => (o.json ? console.error : console.log)(...a);

const cluster = await spawnNatsCluster(3);
const bus = await Bus.connect({ url: cluster.url, name: "elections-bench", namespace: "elect", logger: pino({ level: "silent" }), reconnectTimeWaitMs: 250, streams: { replicas: 3 } });
let stopping = false;
try {
  await bus.provision();
  const BUCKET = "ELECT_LEASES";
  await bus.keyValue(BUCKET, { ttlMs: 15_000 }); // as MOM_RUNNERS: R3 (from streams.replicas), a TTL
  const STREAM = bus.subjects.stream("IN");
  const KV_STREAM = `KV_${BUCKET}`;
  // The writers' own JetStream context: the Bus's 5 s request timeout would hide the election
  // behind the wait for an ack that a killed leader never sends.
  const js = jetstream(connectionOf(bus).nc, { timeout: TIMEOUT_MS });
  const kv = await new Kvm(js).open(BUCKET);
  const subject = bus.subjects.channel("in", { adapter: "bench", channelId: "elect" });

  /** Successful writes as [issued, done] (performance.now()), in order of issue. */
  const writers = { kv: [], stream: [] };
  const failures = { kv: 0, stream: 0 };
  let n = 0;
  const write = {
    kv: () => kv.put("r1", JSON.stringify({ at: Date.now() })),
    stream: () => js.publish(subject, JSON.stringify({ n }), { msgID: `m${++n}` }),
  };
  const loops = Object.keys(write).map(async (w) => {
    while (!stopping) {
      const issued = performance.now();
      try {
        await write[w]();
        writers[w].push([issued, performance.now()]);
      } catch {
        failures[w]++;
      }
      await sleep(WRITE_EVERY_MS);
    }
  });

  /** The longest time between two successful writes ending in [t, until] (t counts as one). */
  const longestGap = (w, t, until) => {
    let last = t;
    let gap = 0;
    for (const [, done] of writers[w]) {
      if (done <= t || done > until) continue;
      gap = Math.max(gap, done - last);
      last = done;
    }
    return Math.max(gap, until - last);
  };
  /** ms from `t` to the end of the first write issued at or after `t` that succeeded; undefined: none yet. */
  const stallAfter = (w, t) => {
    const hit = writers[w].find(([issued]) => issued >= t);
    return hit ? hit[1] - t : undefined;
  };
  const waitFor = async (ok, ms) => {
    const deadline = performance.now() + ms;
    while (!ok()) {
      if (performance.now() > deadline) return false;
      await sleep(20);
    }
    return true;
  };

  const samples = [];
  for (const scenario of only) {
    for (let i = 0; i < SAMPLES; i++) {
      await cluster.waitForHealth(60_000);
      await sleep(1000); // both writers going again before the next fault
      if (scenario === "sigstop-leader") {
        // A frozen node keeps its sockets open, so a client on it notices nothing until its pings
        // go unanswered (nats.js: every 2 min): that is sigstop-client-node. Here: the election.
        const kvLeaderNow = await cluster.leaderOf(KV_STREAM);
        for (let tries = 0; connectionOf(bus).nc.info?.server_name === kvLeaderNow && tries < 10; tries++) {
          await connectionOf(bus).nc.reconnect();
          await sleep(200);
        }
        await sleep(500);
      }
      const kvLeader = await cluster.leaderOf(KV_STREAM);
      const streamLeader = await cluster.leaderOf(STREAM);
      const meta = await cluster.metaLeader();
      const clientNode = connectionOf(bus).nc.info?.server_name;
      const victimName =
        scenario === "stream-leader" ? streamLeader
        : scenario === "meta-leader" ? meta
        : scenario === "sigstop-client-node" ? clientNode
        : scenario === "non-leader" ? (cluster.nodes.map((x) => x.name).filter((x) => x !== kvLeader && x !== streamLeader).sort((a, b) => (a === meta) - (b === meta))[0])
        : kvLeader;
      if (!victimName) throw new Error(`${scenario}: no victim (leaders: kv ${kvLeader}, stream ${streamLeader}, meta ${meta})`);
      const victim = cluster.node(victimName);
      const roles = [victimName === kvLeader && "kv", victimName === streamLeader && "stream", victimName === meta && "meta", victimName === clientNode && "client"].filter(Boolean);

      const t = performance.now();
      const frozen = scenario.startsWith("sigstop");
      let exiting;
      if (frozen) victim.pause();
      else if (scenario === "sigterm-leader") await victim.stop();
      else if (scenario === "lame-duck-leader") exiting = victim.lameDuck();
      else await victim.kill9();
      const got = await waitFor(() => stallAfter("kv", t) !== undefined && stallAfter("stream", t) !== undefined, frozen ? STOP_CAP_MS : 60_000);
      // The gap window: what followed the fault for as long as the first write took (a lame duck:
      // until it exited), and 2 s more.
      await exiting;
      await sleep(2000);
      const until = performance.now();
      const sample = { scenario, victim: victimName, roles, kvMs: stallAfter("kv", t), streamMs: stallAfter("stream", t), kvGapMs: longestGap("kv", t, until), streamGapMs: longestGap("stream", t, until), capped: !got };
      samples.push(sample);
      log(`${scenario} #${i + 1}: ${victimName} (${roles.join("+") || "no leader"}) kv ${fmt(sample.kvMs)} (gap ${fmt(sample.kvGapMs)}) stream ${fmt(sample.streamMs)} (gap ${fmt(sample.streamGapMs)})${got ? "" : " capped"}`);
      if (frozen) victim.resume();
      else {
        await exiting;
        await victim.start();
      }
    }
  }
  stopping = true;
  await Promise.all(loops);

  const report = summary(samples, failures);
  if (o.out) writeFileSync(o.out, report);
  if (o.json) console.log(JSON.stringify({ server: connectionOf(bus).nc.info?.version, samples }, null, 2));
  else console.log(`\n${report}`);
} finally {
  stopping = true;
  await bus.drain().catch(() => {});
  await cluster.stop();
}

function fmt(ms) {
  return ms === undefined ? "none" : `${Math.round(ms)} ms`;
}

function stats(xs) {
  const s = xs.filter((x) => x !== undefined).sort((a, b) => a - b);
  if (s.length === 0) return "none";
  const p50 = s[Math.floor((s.length - 1) / 2)];
  return `${Math.round(s[0])} / ${Math.round(p50)} / ${Math.round(s.at(-1))} ms`;
}

function summary(samples, failures) {
  const lines = [
    `nats-server ${connectionOf(bus).nc.info?.version}, 3 nodes on 127.0.0.1, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}), ${new Date().toISOString()}`,
    `Writers: KV put (R3 bucket with TTL, as MOM_RUNNERS) and stream publish (R3 stream ${bus.subjects.stream("IN")}), each every ${WRITE_EVERY_MS} ms, ${TIMEOUT_MS} ms per attempt, retried.`,
    `Figures (min / p50 / max over ${SAMPLES} samples): "first" = fault -> end of the first write issued after it that succeeded;`,
    `"gap" = the longest time without a successful write from the fault until 2 s after both writers got through (lame duck: after the node exited).`,
    `Roles: what the victim was (kv = led the bucket, stream = led the stream, meta = meta leader, client = the writers' connection was on it).`,
    "",
  ];
  for (const scenario of new Set(samples.map((s) => s.scenario))) {
    const of = samples.filter((s) => s.scenario === scenario);
    lines.push(`${scenario}: ${SCENARIOS[scenario]}`);
    lines.push(`  KV put          first ${stats(of.map((s) => s.kvMs))}   gap ${stats(of.map((s) => s.kvGapMs))}`);
    lines.push(`  stream publish  first ${stats(of.map((s) => s.streamMs))}   gap ${stats(of.map((s) => s.streamGapMs))}`);
    const leading = (role, key) => of.filter((s) => s.roles.includes(role)).map((s) => s[key]);
    if (scenario !== "kv-leader" && scenario !== "non-leader") lines.push(`  KV put when the victim led the bucket: gap ${stats(leading("kv", "kvGapMs"))}`);
    if (scenario !== "stream-leader" && scenario !== "non-leader") lines.push(`  stream publish when the victim led the stream: gap ${stats(leading("stream", "streamGapMs"))}`);
    lines.push(`  samples: ${of.map((s) => `${s.victim}[${s.roles.join("+") || "-"}] kv=${fmt(s.kvGapMs)} stream=${fmt(s.streamGapMs)}${s.capped ? " (capped)" : ""}`).join("; ")}`);
    lines.push("");
  }
  lines.push(`Failed attempts over the whole run (timeouts, no responders): kv ${failures.kv}, stream ${failures.stream}.`);
  return `${lines.join("\n")}\n`;
}
