#!/usr/bin/env node
// Scale-out of agent runners: throughput for 1, 2 and 3 `mom runner` processes, the time to take
// over a killed replica's channels, and the time for a joining replica to take its share.
// See bench/README.md. Needs `npm run build` and a nats-server binary.
//
//   npm run bench -- scale
//   node bench/scale.mjs [--json] [--channels 60] [--seconds 15] [--model-ms 500] [--max-runs 16] [--lease 5]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(join(root, p));
const { spawnNatsServer, startFakeLlm } = await dist("libs/testing/dist/index.js");
const { Bus } = await dist("libs/bus/dist/index.js");
// The NATS handles behind a Bus (not exported by the package: for tests and benches only).
const { connectionOf } = await dist("libs/bus/dist/bus.js");
const { runnersBucket } = await dist("libs/contracts/dist/index.js");
const { startRunnerProcess } = await import("./runner-process.mjs");
const { pino } = await import("pino");

const { values: o } = parseArgs({
  options: {
    json: { type: "boolean", default: false },
    channels: { type: "string", default: "60" },
    seconds: { type: "string", default: "15" },
    "model-ms": { type: "string", default: "500" },
    "max-runs": { type: "string", default: "16" },
    lease: { type: "string", default: "5" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (o.help) {
  console.log("usage: node bench/scale.mjs [--json] [--channels 60] [--seconds 15] [--model-ms 500] [--max-runs 16] [--lease 5]");
  process.exit(0);
}
const CHANNELS = Number(o.channels);
const SECONDS = Number(o.seconds);
const MODEL_MS = Number(o["model-ms"]);
const MAX_RUNS = Number(o["max-runs"]);
const LEASE = Number(o.lease);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => o.json || console.error(...a);

/** NATS, a fake model that answers the newest "q c:n" after MODEL_MS, a data dir and N runners. */
async function cluster() {
  const nats = await spawnNatsServer();
  const llm = await startFakeLlm();
  llm.setFallback((req) => {
    for (let i = req.messages.length - 1; i >= 0; i--) {
      const m = req.messages[i];
      const text = typeof m.content === "string" ? m.content : (m.content ?? []).map((c) => c.text ?? "").join("");
      const q = m.role === "user" ? /q (\S+):(\d+)/.exec(text) : null;
      if (q) return { text: `a ${q[1]}:${q[2]}`, delayMs: MODEL_MS };
    }
    return { text: "?" };
  });
  const dataDir = mkdtempSync(join(os.tmpdir(), "mom-bench-scale-"));
  writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
  writeFileSync(
    join(dataDir, "config.json"),
    JSON.stringify({ model: "fake/fake-model", nats: { url: nats.url, namespace: nats.namespace }, runner: { maxConcurrentRuns: MAX_RUNS, leaseSeconds: LEASE, shutdownGraceSeconds: 5 }, log: { level: "warn" } }),
  );
  const bus = await Bus.connect({ url: nats.url, name: "bench-scale", namespace: nats.namespace, logger: pino({ level: "silent" }) });
  await bus.provision();
  const runners = [];
  let count = 0;
  const addRunner = async () => {
    const r = await startRunnerProcess({ dataDir, bus, name: `r${++count}` });
    runners.push(r);
    return r;
  };
  // Closed loop: each channel sends its next mention when the previous one is answered.
  const answered = [];
  const inFlight = new Map();
  let maxConcurrent = 0;
  const next = new Map();
  let driving = false;
  const send = async (ch) => {
    const n = (next.get(ch) ?? 0) + 1;
    next.set(ch, n);
    const m = { id: `${ch}-${n}`, channelId: ch, timestamp: new Date().toISOString(), sender: { id: "U1", username: "u", isBot: false }, text: `q ${ch}:${n}`, attachments: [], isMention: true };
    await bus.publish(bus.subjects.channel("in", { adapter: "cli", channelId: ch }), m, m.id, { retryForMs: 30_000 });
  };
  const sub = connectionOf(bus).nc.subscribe(bus.subjects.wildcard("out"));
  void (async () => {
    for await (const msg of sub) {
      const e = msg.json();
      const ch = bus.subjects.parse(msg.subject)?.channelId;
      if (e.event.type === "run_started") {
        inFlight.set(ch, Date.now());
        maxConcurrent = Math.max(maxConcurrent, inFlight.size);
        startedAt.push({ ch, t: Date.now() });
      } else if (e.event.type === "run_ended") {
        inFlight.delete(ch);
        if (e.event.finalText) {
          answered.push({ ch, t: Date.now() });
          if (driving) void send(ch);
        }
      }
    }
  })();
  const startedAt = [];
  return {
    bus,
    runners,
    addRunner,
    answered,
    startedAt,
    drive: async (channels) => {
      driving = true;
      await Promise.all(channels.map((ch) => send(ch)));
    },
    stopDriving: () => (driving = false),
    concurrency: () => maxConcurrent,
    resetConcurrency: () => (maxConcurrent = inFlight.size),
    stop: async () => {
      driving = false;
      sub.unsubscribe();
      for (const r of runners) if (r.child.exitCode === null) r.child.kill("SIGKILL");
      await Promise.all(runners.map((r) => r.exited));
      await bus.drain();
      await llm.close();
      await nats.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function loadsOf(bus) {
  const kv = await bus.existingKeyValue(runnersBucket(bus.subjects.namespace));
  const out = new Map();
  if (!kv) return out;
  for await (const key of await kv.keys()) {
    const e = await kv.get(key);
    if (e?.operation === "PUT") out.set(key, JSON.parse(e.string()).channels);
  }
  return out;
}

const channels = Array.from({ length: CHANNELS }, (_, i) => `c${i}`);

async function throughput(n) {
  const c = await cluster();
  try {
    for (let i = 0; i < n; i++) await c.addRunner();
    await c.drive(channels);
    await sleep(3000); // warm-up: sessions created, channels spread
    const from = c.answered.length;
    c.resetConcurrency();
    const t0 = Date.now();
    await sleep(SECONDS * 1000);
    const runs = c.answered.length - from;
    const rps = runs / ((Date.now() - t0) / 1000);
    return { runners: n, runsPerSecond: Number(rps.toFixed(1)), concurrentChannels: c.concurrency() };
  } finally {
    await c.stop();
  }
}

async function takeover() {
  const c = await cluster();
  try {
    await c.addRunner();
    await c.addRunner();
    await c.drive(channels.slice(0, 40));
    await sleep(4000);
    const loads = await loadsOf(c.bus);
    const victim = [...loads.entries()].sort((a, b) => b[1] - a[1])[0][0];
    const kv = await c.bus.existingKeyValue(`${c.bus.subjects.namespace.toUpperCase().replace(/-/g, "_")}_CHANNELS`);
    const owned = [];
    for await (const key of await kv.keys()) {
      const e = await kv.get(key);
      if (JSON.parse(e.string()).owner === victim) owned.push(key.split(".")[1]);
    }
    c.runners.find((r) => r.name === victim).child.kill("SIGKILL");
    const killedAt = Date.now();
    const deadline = killedAt + LEASE * 1000 * 4 + 10_000;
    const resumed = new Map();
    while (resumed.size < owned.length && Date.now() < deadline) {
      for (const { ch, t } of c.startedAt) if (t > killedAt && owned.includes(ch) && !resumed.has(ch)) resumed.set(ch, t - killedAt);
      await sleep(100);
    }
    const times = [...resumed.values()].sort((a, b) => a - b);
    return { leaseSeconds: LEASE, channelsOfKilledReplica: owned.length, resumed: times.length, firstMs: times[0], lastMs: times.at(-1) };
  } finally {
    await c.stop();
  }
}

async function joining() {
  const c = await cluster();
  try {
    await c.addRunner();
    await c.addRunner();
    await c.drive(channels);
    await sleep(4000);
    const joining = await c.addRunner();
    const t0 = Date.now();
    const fair = CHANNELS / 3;
    let shareMs;
    let evenMs;
    while (Date.now() - t0 < 30_000 && evenMs === undefined) {
      const loads = await loadsOf(c.bus);
      const mine = loads.get(joining.name) ?? 0;
      if (shareMs === undefined && mine >= 0.75 * fair) shareMs = Date.now() - t0;
      if ([...loads.values()].length === 3 && [...loads.values()].every((n) => Math.abs(n - fair) <= 0.25 * fair)) evenMs = Date.now() - t0;
      await sleep(100);
    }
    return { channels: CHANNELS, fairShare: Number(fair.toFixed(1)), msToThreeQuartersOfShare: shareMs, msToAllWithin25Percent: evenMs, loads: Object.fromEntries(await loadsOf(c.bus)) };
  } finally {
    await c.stop();
  }
}

log(`scale bench: ${CHANNELS} channels, model ${MODEL_MS} ms, ${MAX_RUNS} runs at once per replica, ${SECONDS} s per measurement, lease ${LEASE} s`);
const results = { machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version }, throughput: [] };
for (const n of [1, 2, 3]) {
  const r = await throughput(n);
  results.throughput.push(r);
  log(`  ${n} runner(s): ${r.runsPerSecond} runs/s, up to ${r.concurrentChannels} channels running at once`);
}
const base = results.throughput[0].runsPerSecond;
for (const r of results.throughput) r.vsOne = Number((r.runsPerSecond / base).toFixed(2));
log(`  speed-up: ${results.throughput.map((r) => `${r.runners}: ×${r.vsOne}`).join(", ")}`);
results.takeover = await takeover();
log(`  kill -9 of a replica (lease ${LEASE} s): its ${results.takeover.channelsOfKilledReplica} channels running again after ${results.takeover.firstMs}–${results.takeover.lastMs} ms (${results.takeover.resumed} resumed)`);
results.join = await joining();
log(`  a joining replica: 75% of its share after ${results.join.msToThreeQuartersOfShare} ms, all replicas within ±25% after ${results.join.msToAllWithin25Percent} ms (${JSON.stringify(results.join.loads)})`);
if (o.json) console.log(JSON.stringify(results, null, 2));
