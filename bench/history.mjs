#!/usr/bin/env node
// Does a message cost more in a channel with a long history? And what does a cached channel cost
// in memory? A runner on the bus (in-process for the timings, a `mom runner` process for its
// memory), a model that answers instantly.
// See bench/README.md.
//
//   npm run bench -- history [--history 100000] [--context 10000] [--rounds 20] [--memory-channels 500]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, createWriteStream } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(join(root, p));
const { spawnNatsServer, startFakeLlm } = await dist("libs/testing/dist/index.js");
const { loadConfig, createLogger } = await dist("libs/config/dist/index.js");
const { Bus } = await dist("libs/bus/dist/index.js");
// The NATS handles behind a Bus (not exported by the package: for tests and benches only).
const { connectionOf } = await dist("libs/bus/dist/bus.js");
const { startRunner } = await dist("services/agent-runner/dist/index.js");
const { busOptions } = await dist("libs/bus/dist/index.js");
const { SessionManager } = await import("@mariozechner/pi-coding-agent");
const { procRssBytes, startRunnerProcess } = await import("./runner-process.mjs");

const { values: o } = parseArgs({
  options: {
    json: { type: "boolean", default: false },
    history: { type: "string", default: "100000" },
    context: { type: "string", default: "10000" },
    rounds: { type: "string", default: "20" },
    "memory-channels": { type: "string", default: "500" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (o.help) {
  console.log("usage: node bench/history.mjs [--json] [--history 100000] [--context 10000] [--rounds 20] [--memory-channels 500]");
  process.exit(0);
}
const HISTORY = Number(o.history);
const CONTEXT = Number(o.context);
const ROUNDS = Number(o.rounds);
const MEMORY_CHANNELS = Number(o["memory-channels"]);
const log = (...a) => o.json || console.error(...a);
const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** A channel with `lines` log lines and a session of `entries` entries, synced up to the end of the log. */
async function writeHistory(dir, lines, entries) {
  mkdirSync(dir, { recursive: true });
  const out = createWriteStream(join(dir, "log.jsonl"));
  let bytes = 0;
  let lastId = "";
  for (let i = 0; i < lines; i++) {
    lastId = `h${i}`;
    const line = `${JSON.stringify({ id: lastId, date: new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString(), user: `U${i % 40}`, userName: `user${i % 40}`, text: `message ${i} of a busy channel, about as long as a chat line usually is, with a few words more`, attachments: [], isBot: false })}\n`;
    bytes += Buffer.byteLength(line);
    if (!out.write(line)) await new Promise((r) => out.once("drain", r));
  }
  await new Promise((r) => out.end(r));
  const sm = SessionManager.open(join(dir, "context.jsonl"), dir, dir);
  const usage = { input: 10, output: 10, cacheRead: 0, cacheWrite: 0, totalTokens: 20, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
  let keep = "";
  for (let i = 0; i < entries / 2; i++) {
    const id = sm.appendMessage({ role: "user", content: [{ type: "text", text: `[2025-01-01] [@user1]: question ${i}` }], timestamp: Date.now() });
    sm.appendMessage({ role: "assistant", content: [{ type: "text", text: `answer ${i}` }], api: "openai-completions", provider: "fake", model: "fake-model", usage, stopReason: "stop", timestamp: Date.now() });
    if (i === Math.floor(entries / 2) - 5) keep = id;
  }
  // What pi's compaction leaves: a summary, then the recent turns.
  sm.appendCompaction("Earlier: the channel discussed many things.", keep, 100_000);
  sm.appendCustomEntry("mom.log-sync", { lastId, offset: bytes });
}

/** `fn(ask, bus)`: `ask(channel)` mentions mom in a channel and resolves with the ms to its `run_ended`. */
async function withAsk(dataDir, nats, fn) {
  const loaded = loadConfig(dataDir);
  const logger = createLogger("bench", { level: "warn" });
  const bus = await Bus.connect(busOptions(loaded, nats.url, "bench-history", logger));
  const waiters = new Map();
  const sub = connectionOf(bus).nc.subscribe(bus.subjects.wildcard("out"));
  void (async () => {
    for await (const m of sub) {
      const e = m.json();
      if (e.event.type === "run_ended") waiters.get(bus.subjects.parse(m.subject).channelId)?.(e);
    }
  })();
  let n = 0;
  const ask = async (channel) => {
    const id = `${channel}-${++n}`;
    const done = new Promise((r) => waiters.set(channel, r));
    const t0 = performance.now();
    await bus.publish(bus.subjects.channel("in", { adapter: "cli", channelId: channel }), { id, channelId: channel, timestamp: new Date().toISOString(), sender: { id: "U1", username: "user1", isBot: false }, text: "hello", attachments: [], isMention: true }, id);
    await done;
    return performance.now() - t0;
  };
  try {
    return await fn(ask, bus);
  } finally {
    sub.unsubscribe();
    await bus.drain();
  }
}

/** A runner in this process, as `mom runner` starts it (for the timings). */
async function withRunner(dataDir, nats, fn) {
  const loaded = loadConfig(dataDir);
  const logger = createLogger("bench", { level: "warn" });
  const runner = await startRunner({ loaded, bus: busOptions(loaded, nats.url, "agent-runner", logger), logger });
  try {
    return await withAsk(dataDir, nats, fn);
  } finally {
    await runner.close();
  }
}

/**
 * A `mom runner` process of its own, as deployed, on the same data directory: its RSS is what the
 * memory goal is about (read as found, never after a forced collection it would not make).
 */
function withRunnerProcess(dataDir, nats, fn) {
  return withAsk(dataDir, nats, async (ask, bus) => {
    const { child, exited } = await startRunnerProcess({ dataDir, bus, name: "memory" });
    try {
      return await fn(ask, () => procRssBytes(child.pid) / 2 ** 20);
    } finally {
      child.kill("SIGTERM");
      await exited;
    }
  });
}

const settle = () => new Promise((r) => setTimeout(r, 2000));

const nats = await spawnNatsServer();
const llm = await startFakeLlm();
const dataDir = mkdtempSync(join(os.tmpdir(), "mom-bench-history-"));
writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
writeFileSync(join(dataDir, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { url: nats.url, namespace: nats.namespace }, runner: { maxConcurrentRuns: 64 }, log: { level: "warn" } }));
const results = { historyLines: HISTORY, contextEntries: CONTEXT };
try {
  log(`history bench: a channel with ${HISTORY} log lines and ${CONTEXT} session entries vs a fresh one`);
  const t = performance.now();
  await writeHistory(join(dataDir, "workspace/channels/cli/long"), HISTORY, CONTEXT);
  log(`  (history written in ${((performance.now() - t) / 1000).toFixed(1)} s)`);

  // Cold: a runner that has never seen either channel answers its first mention in each.
  await withRunner(dataDir, nats, async (ask) => {
    await ask("warm-up");
    results.coldFreshMs = await ask("fresh");
    results.coldLongMs = await ask("long");
    // Warm: mentions alternate between the two channels.
    const fresh = [];
    const long = [];
    for (let i = 0; i < ROUNDS; i++) {
      fresh.push(await ask("fresh"));
      long.push(await ask("long"));
    }
    results.warmFreshP50Ms = p50(fresh);
    results.warmLongP50Ms = p50(long);
  });
  results.warmRatio = results.warmLongP50Ms / results.warmFreshP50Ms;
  results.coldExtraMs = results.coldLongMs - results.coldFreshMs;
  log(`  warm p50: fresh ${results.warmFreshP50Ms.toFixed(1)} ms, long history ${results.warmLongP50Ms.toFixed(1)} ms (×${results.warmRatio.toFixed(2)})`);
  log(`  cold first mention: fresh ${results.coldFreshMs.toFixed(1)} ms, long history ${results.coldLongMs.toFixed(1)} ms (+${results.coldExtraMs.toFixed(0)} ms)`);

  // Memory: a `mom runner` process answers one mention in each of N channels; its RSS before and after.
  await withRunnerProcess(dataDir, nats, async (ask, rss) => {
    await ask("mem-warm");
    await settle();
    const before = rss();
    const channels = Array.from({ length: MEMORY_CHANNELS }, (_, i) => `m${i}`);
    for (let i = 0; i < channels.length; i += 50) await Promise.all(channels.slice(i, i + 50).map((c) => ask(c)));
    await settle();
    const after = rss();
    results.memory = { channels: MEMORY_CHANNELS, runnerRssBeforeMb: Number(before.toFixed(1)), runnerRssAfterMb: Number(after.toFixed(1)), perChannelKb: Number((((after - before) * 1024) / MEMORY_CHANNELS).toFixed(0)) };
  });
  log(`  memory: the runner process's RSS ${results.memory.runnerRssBeforeMb} MB → ${results.memory.runnerRssAfterMb} MB after ${MEMORY_CHANNELS} channels had a run (${results.memory.perChannelKb} KB per cached channel)`);
} finally {
  await llm.close();
  await nats.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
if (o.json) console.log(JSON.stringify(results, null, 2));
