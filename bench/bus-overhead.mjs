#!/usr/bin/env node
// Bus overhead of mom: the same agent, with a model that answers instantly, driven once through
// NATS JetStream (ingress -> mom.in -> agent-runner -> mom.out) and once called in-process.
// See bench/README.md for what is measured and how to read the figures.
//
//   npm run bench                      # builds first, then runs this
//   node bench/bus-overhead.mjs [--json] [--channels 50] [--per-channel 20] [--warmup-rounds 1]
//
// Needs a prior `npm run build` (imports the compiled dist/ of the workspace packages) and a
// nats-server binary (PATH, /usr/sbin/nats-server, or NATS_SERVER_BIN).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(join(root, p));

const { freePort, findNatsServer, startFakeLlm } = await dist("libs/testing/dist/index.js");
const { loadConfig, createLogger } = await dist("libs/config/dist/index.js");
const { Bus } = await dist("libs/bus/dist/index.js");
const { startRunner } = await dist("services/agent-runner/dist/index.js");
const { busOptions } = await dist("services/cli/dist/index.js");
const { ChannelAgent, resolveModel } = await dist("libs/agent/dist/index.js");
const { WorkspaceLayout } = await dist("libs/store/dist/index.js");
const { qualifiedChannelId } = await dist("libs/contracts/dist/index.js");

// ---- options ---------------------------------------------------------------------------------

function parseArgs(argv) {
  const o = { json: false, channels: 50, perChannel: 20, warmupRounds: 1, runTimeoutMs: 30_000 };
  const int = (name, v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${name} expects a non-negative integer, got ${JSON.stringify(v)}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--json") o.json = true;
    else if (a === "--channels") o.channels = int(a, argv[++i]);
    else if (a === "--per-channel") o.perChannel = int(a, argv[++i]);
    else if (a === "--warmup-rounds") o.warmupRounds = int(a, argv[++i]);
    else if (a === "-h" || a === "--help") {
      console.log("usage: node bench/bus-overhead.mjs [--json] [--channels N] [--per-channel N] [--warmup-rounds N]");
      process.exit(0);
    } else throw new Error(`unknown argument ${a} (try --help)`);
  }
  if (o.channels < 1 || o.perChannel < 1) throw new Error("--channels and --per-channel must be >= 1");
  return o;
}

const opts = parseArgs(process.argv.slice(2));
const say = opts.json ? () => {} : (...a) => console.error(...a); // progress goes to stderr

// ---- small helpers ---------------------------------------------------------------------------

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length); // nearest-rank
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

function stats(values) {
  const s = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / (s.length || 1);
  return { n: s.length, p50: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99), mean, max: s.at(-1) ?? NaN, min: s[0] ?? NaN };
}

const round = (x, d = 2) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : null);
const mb = (bytes) => round(bytes / 1024 / 1024, 1);

/** CPU seconds (user+sys) of another process, from /proc (Linux); undefined elsewhere. */
function procCpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime
    return ticks / 100; // USER_HZ is 100 on every Linux we care about
  } catch {
    return undefined;
  }
}

function procRssBytes(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Runs `fn(channelIndex, round)` for every channel, `rounds` times per channel, one at a time per channel. */
async function perChannelLoop(channels, rounds, fn) {
  await Promise.all(
    Array.from({ length: channels }, async (_, c) => {
      for (let r = 0; r < rounds; r++) await fn(c, r);
    }),
  );
}

// ---- nats-server -----------------------------------------------------------------------------

async function startNats() {
  const bin = findNatsServer();
  if (!bin) throw new Error("nats-server not found: install it (apt-get install -y nats-server) or set NATS_SERVER_BIN");
  const version = (spawnSync(bin, ["--version"], { encoding: "utf8" }).stdout || "").trim().replace(/^nats-server:\s*/, "");
  const port = await freePort();
  const storeDir = mkdtempSync(join(os.tmpdir(), "mom-bench-nats-"));
  const child = spawn(bin, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], { stdio: "ignore" });
  const exited = new Promise((r) => child.once("exit", r));
  const { connect } = await import("node:net");
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nats-server exited with ${child.exitCode}`);
    const ok = await new Promise((resolve) => {
      const s = connect(port, "127.0.0.1");
      s.once("connect", () => (s.destroy(), resolve(true)));
      s.once("error", () => resolve(false));
    });
    if (ok) break;
    if (Date.now() > deadline) throw new Error(`nats-server did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    version,
    pid: child.pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const t = setTimeout(() => child.kill("SIGKILL"), 3000);
        await exited;
        clearTimeout(t);
      }
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

// ---- the bus run -----------------------------------------------------------------------------

/**
 * Publishes ChannelMessages on mom.in and watches mom.out (core NATS subscription on the whole
 * out wildcard) to time each message: t0 just before publish, t1 first outbound event of its run,
 * t2 its run_ended.
 */
function busDriver(bus, tag) {
  const byMessage = new Map(); // messageId -> record
  const runToMessage = new Map(); // runId -> messageId
  const orphans = new Map(); // runId -> {t, events} seen before any event naming its trigger (not expected)
  const sub = bus.nc.subscribe(bus.subjects.wildcard("out"));
  let undecodable = 0;
  const pump = (async () => {
    for await (const m of sub) {
      const t = performance.now();
      let out;
      try {
        out = m.json();
      } catch {
        undecodable++;
        continue;
      }
      const ev = out?.event;
      let msgId = runToMessage.get(out.runId);
      if (msgId === undefined && ev?.trigger?.messageId !== undefined) {
        msgId = ev.trigger.messageId;
        runToMessage.set(out.runId, msgId);
      }
      const rec = msgId === undefined ? undefined : byMessage.get(msgId);
      if (!rec) {
        const o = orphans.get(out.runId) ?? { t, events: 0 };
        o.events++;
        orphans.set(out.runId, o);
        continue;
      }
      const early = orphans.get(out.runId);
      if (early) {
        orphans.delete(out.runId);
        rec.t1 ??= early.t;
        rec.events += early.events;
      }
      rec.t1 ??= t;
      rec.events++;
      rec.types.add(ev?.type);
      if (ev?.type === "run_ended") {
        rec.t2 = t;
        rec.stopReason = ev.stopReason;
        rec.finalText = ev.finalText;
        rec.runnerDurationMs = ev.durationMs;
        rec.done();
      }
    }
  })();

  let n = 0;
  /** Sends one message in channel `c` and resolves with its record once its run_ended arrived (or timed out). */
  async function send(c) {
    const channelId = `C${String(c).padStart(3, "0")}`;
    const id = `${tag}-${channelId}-${++n}`;
    const msg = {
      id,
      channelId,
      timestamp: new Date().toISOString(),
      sender: { id: "u1", username: "bench", isBot: false },
      text: "hi",
      attachments: [],
      isMention: true,
    };
    const rec = { id, channel: channelId, t0: 0, t1: undefined, t2: undefined, events: 0, types: new Set(), stopReason: undefined };
    const ended = new Promise((resolve) => {
      const timer = setTimeout(() => {
        rec.timedOut = true;
        resolve();
      }, opts.runTimeoutMs);
      rec.done = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    byMessage.set(id, rec);
    rec.t0 = performance.now();
    await bus.publish(bus.subjects.channel("in", { adapter: "bench", channelId }), msg, id);
    rec.tAck = performance.now();
    await ended;
    return rec;
  }

  return {
    send,
    get undecodable() {
      return undecodable;
    },
    get orphanRuns() {
      return orphans.size;
    },
    async close() {
      sub.unsubscribe();
      await pump.catch(() => {});
    },
  };
}

async function runBusPhase(ctx) {
  const { loaded, url, logger } = ctx;
  const runner = await startRunner({ loaded, bus: busOptions(loaded, url, "agent-runner", logger), logger });
  const bus = await Bus.connect(busOptions(loaded, url, "bench-load", logger));
  await bus.provision();
  const driver = busDriver(bus, `bus-${randomBytes(3).toString("hex")}`);
  try {
    say(`bus: warm-up ${opts.channels * opts.warmupRounds} message(s) (${opts.warmupRounds} per channel: creates each channel's session)…`);
    await perChannelLoop(opts.channels, opts.warmupRounds, (c) => driver.send(c));
    ctx.llm.reset();
    ctx.llm.setFallback(ctx.fallback);

    say(`bus: ${opts.channels} channels × ${opts.perChannel} messages, one in flight per channel…`);
    const records = [];
    const cpu0 = process.cpuUsage();
    const natsCpu0 = procCpuSeconds(ctx.nats.pid);
    const start = performance.now();
    await perChannelLoop(opts.channels, opts.perChannel, async (c) => records.push(await driver.send(c)));
    const wallMs = performance.now() - start;
    const cpu = process.cpuUsage(cpu0);
    const natsCpu1 = procCpuSeconds(ctx.nats.pid);
    const llmRequests = ctx.llm.requests.length;
    ctx.llm.reset();
    ctx.llm.setFallback(ctx.fallback);

    const ok = records.filter((r) => !r.timedOut && r.stopReason === "stop");
    return {
      messages: records.length,
      completed: ok.length,
      timedOut: records.filter((r) => r.timedOut).length,
      failed: records.filter((r) => !r.timedOut && r.stopReason !== "stop").map((r) => ({ id: r.id, stopReason: r.stopReason })).slice(0, 5),
      llmRequests,
      wallMs,
      msgsPerSec: (ok.length / wallMs) * 1000,
      publishAck: stats(ok.map((r) => r.tAck - r.t0)),
      firstEvent: stats(ok.map((r) => r.t1 - r.t0)),
      runEnded: stats(ok.map((r) => r.t2 - r.t0)),
      runnerDuration: stats(ok.map((r) => r.runnerDurationMs)),
      eventsPerRun: stats(ok.map((r) => r.events)),
      nodeCpuSec: (cpu.user + cpu.system) / 1e6,
      natsCpuSec: natsCpu0 !== undefined && natsCpu1 !== undefined ? natsCpu1 - natsCpu0 : undefined,
      undecodable: driver.undecodable,
      orphanRuns: driver.orphanRuns,
    };
  } finally {
    await driver.close();
    await runner.close();
    await bus.drain();
  }
}

// ---- the in-process run ----------------------------------------------------------------------

async function runInProcessPhase(ctx) {
  const { loaded } = ctx;
  const dataDir = join(ctx.tmp, "inproc");
  const workspaceDir = join(dataDir, "workspace");
  mkdirSync(workspaceDir, { recursive: true });
  const layout = new WorkspaceLayout(workspaceDir);
  await layout.ensureWorkspace();
  const resolved = resolveModel("fake", "fake-model", loaded.paths);
  const agents = new Map();
  const tag = `inproc-${randomBytes(3).toString("hex")}`;
  let n = 0;

  async function agentFor(ref) {
    const key = qualifiedChannelId(ref);
    let a = agents.get(key);
    if (!a) {
      const store = layout.channel(ref);
      a = ChannelAgent.create({
        qualifiedChannelId: key,
        workspaceDir,
        store,
        resolved,
        thinkingLevel: loaded.config.thinkingLevel,
        agentDir: join(dataDir, ".pi"),
        listChannels: () => layout.listChannels().map(qualifiedChannelId),
      }).then((agent) => ({ agent, store }));
      agents.set(key, a);
    }
    return a;
  }

  // What ChannelWorker does per message, minus the bus: log the message, run, log the reply.
  async function send(c) {
    const channelId = `C${String(c).padStart(3, "0")}`;
    const ref = { adapter: "bench", channelId };
    const id = `${tag}-${channelId}-${++n}`;
    const date = new Date().toISOString();
    const rec = { id, t0: performance.now(), t1: undefined, t2: undefined, events: 0 };
    const { agent, store } = await agentFor(ref);
    await store.appendLog({ id, date, user: "u1", userName: "bench", text: "hi", attachments: [], isBot: false, isMention: true });
    const outcome = await agent.run({ id, date, userName: "bench", text: "hi", attachments: [] }, () => {
      rec.t1 ??= performance.now();
      rec.events++;
    });
    if (outcome.finalText) {
      await store.appendLog({
        id: `${id}:reply`,
        date: new Date().toISOString(),
        user: "mom",
        userName: "mom",
        text: outcome.finalText,
        attachments: [],
        isBot: true,
        runId: `${id}:run`,
        metadata: { triggerId: id },
      });
    }
    rec.t2 = performance.now();
    rec.stopReason = outcome.stopReason;
    return rec;
  }

  try {
    say(`in-process: warm-up ${opts.channels * opts.warmupRounds} message(s)…`);
    await perChannelLoop(opts.channels, opts.warmupRounds, (c) => send(c));
    ctx.llm.reset();
    ctx.llm.setFallback(ctx.fallback);

    say(`in-process: ${opts.channels} channels × ${opts.perChannel} messages, one in flight per channel…`);
    const records = [];
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    await perChannelLoop(opts.channels, opts.perChannel, async (c) => records.push(await send(c)));
    const wallMs = performance.now() - start;
    const cpu = process.cpuUsage(cpu0);
    const llmRequests = ctx.llm.requests.length;
    ctx.llm.reset();
    ctx.llm.setFallback(ctx.fallback);
    const ok = records.filter((r) => r.stopReason === "stop");
    return {
      messages: records.length,
      completed: ok.length,
      failed: records.filter((r) => r.stopReason !== "stop").map((r) => ({ id: r.id, stopReason: r.stopReason })).slice(0, 5),
      llmRequests,
      wallMs,
      msgsPerSec: (ok.length / wallMs) * 1000,
      firstEvent: stats(ok.map((r) => r.t1 - r.t0)),
      runEnded: stats(ok.map((r) => r.t2 - r.t0)),
      eventsPerRun: stats(ok.map((r) => r.events)),
      nodeCpuSec: (cpu.user + cpu.system) / 1e6,
    };
  } finally {
    for (const a of agents.values()) (await a.catch(() => undefined))?.agent.dispose();
  }
}

// ---- main ------------------------------------------------------------------------------------

async function main() {
  const tmp = mkdtempSync(join(os.tmpdir(), "mom-bench-"));
  const cleanups = [() => rmSync(tmp, { recursive: true, force: true })];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        console.error("bench: cleanup:", err?.message ?? err);
      }
    }
    cleanups.length = 0;
  };
  const onSignal = () => void cleanup().finally(() => process.exit(130));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const nats = await startNats();
    cleanups.push(() => nats.stop());
    const llm = await startFakeLlm();
    cleanups.push(() => llm.close());
    const fallback = { text: "ok", usage: { input: 10, output: 1 } };
    llm.setFallback(fallback);

    const dataDir = join(tmp, "data");
    mkdirSync(dataDir);
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(
      join(dataDir, "config.json"),
      JSON.stringify({ model: "fake/fake-model", nats: { url: nats.url, namespace: "bench" }, log: { level: "error" } }),
    );
    const loaded = loadConfig(dataDir, {});
    const logger = createLogger("bench", { level: "error" });
    const ctx = { tmp, loaded, url: nats.url, logger, llm, fallback, nats };

    const t0 = performance.now();
    const bus = await runBusPhase(ctx);
    const inproc = await runInProcessPhase(ctx);
    const natsRss = procRssBytes(nats.pid);
    const mem = process.memoryUsage();
    const cpus = os.cpus();
    const summary = {
      load: {
        channels: opts.channels,
        messagesPerChannel: opts.perChannel,
        messages: opts.channels * opts.perChannel,
        warmupMessages: opts.channels * opts.warmupRounds,
        inFlight: `at most ${opts.channels} (one per channel: the next message of a channel is published when the previous one's run_ended arrives)`,
        model: "fake/fake-model (OpenAI-compatible fake on loopback, instant reply 'ok')",
      },
      bus,
      inProcess: inproc,
      ratio: {
        p50RunEnded: bus.runEnded.p50 / inproc.runEnded.p50,
        p99RunEnded: bus.runEnded.p99 / inproc.runEnded.p99,
        throughput: bus.msgsPerSec / inproc.msgsPerSec,
        addedP50Ms: bus.runEnded.p50 - inproc.runEnded.p50,
      },
      process: {
        rssMb: mb(mem.rss),
        peakRssMb: round(process.resourceUsage().maxRSS / 1024, 1),
        heapUsedMb: mb(mem.heapUsed),
        natsServerRssMb: natsRss !== undefined ? mb(natsRss) : null,
      },
      machine: {
        cpus: cpus.length,
        cpuModel: cpus[0]?.model?.trim() ?? "unknown",
        node: process.version,
        natsServer: nats.version,
        platform: `${os.platform()} ${os.release()}`,
      },
      totalSeconds: round((performance.now() - t0) / 1000, 1),
    };
    if (opts.json) console.log(JSON.stringify(summary, (k, v) => (typeof v === "number" ? round(v, 3) : v), 2));
    else printTable(summary);
    const problems = [];
    if (bus.completed !== bus.messages) problems.push(`bus: ${bus.messages - bus.completed} of ${bus.messages} runs did not end with stopReason "stop" (${bus.timedOut} timed out)`);
    if (inproc.completed !== inproc.messages) problems.push(`in-process: ${inproc.messages - inproc.completed} of ${inproc.messages} runs did not end with stopReason "stop"`);
    for (const p of problems) console.error(`bench: ${p}`);
    process.exitCode = problems.length ? 1 : 0;
  } finally {
    await cleanup();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

function printTable(s) {
  const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "—");
  const row = (cells, widths) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join("  ");
  const w = [34, 9, 9, 9, 9, 9];
  const lines = [];
  const { bus, inProcess: ip, machine: m } = s;
  lines.push("");
  lines.push(`mom bus overhead — ${s.load.messages} messages over ${s.load.channels} channels (${s.load.messagesPerChannel} each), ${s.load.warmupMessages} warm-up messages excluded`);
  lines.push(`in flight: ${s.load.inFlight}`);
  lines.push(`model: ${s.load.model}`);
  lines.push("");
  lines.push(row(["latency (ms)", "p50", "p90", "p99", "mean", "max"], w));
  lines.push("-".repeat(w.reduce((a, b) => a + b + 2, -2)));
  const st = (label, x) => lines.push(row([label, f(x.p50), f(x.p90), f(x.p99), f(x.mean), f(x.max)], w));
  st("bus: publish → JetStream ack", bus.publishAck);
  st("bus: publish → first event", bus.firstEvent);
  st("bus: publish → run_ended", bus.runEnded);
  st("bus: runner-side run duration", bus.runnerDuration);
  st("in-process: prompt → first event", ip.firstEvent);
  st("in-process: prompt → run end", ip.runEnded);
  lines.push("");
  const w2 = [34, 12, 12];
  lines.push(row(["throughput", "bus", "in-process"], w2));
  lines.push("-".repeat(w2.reduce((a, b) => a + b + 2, -2)));
  lines.push(row(["runs completed", `${bus.completed}/${bus.messages}`, `${ip.completed}/${ip.messages}`], w2));
  lines.push(row(["wall time (s)", f(bus.wallMs / 1000, 2), f(ip.wallMs / 1000, 2)], w2));
  lines.push(row(["messages/s", f(bus.msgsPerSec), f(ip.msgsPerSec)], w2));
  lines.push(row(["outbound events per run (p50)", f(bus.eventsPerRun.p50, 0), f(ip.eventsPerRun.p50, 0)], w2));
  lines.push(row(["node CPU (s) during the phase", f(bus.nodeCpuSec, 2), f(ip.nodeCpuSec, 2)], w2));
  lines.push(row(["nats-server CPU (s)", bus.natsCpuSec !== undefined ? f(bus.natsCpuSec, 2) : "—", "—"], w2));
  lines.push(row(["LLM requests", bus.llmRequests, ip.llmRequests], w2));
  lines.push("");
  lines.push(
    `bus / in-process: p50 run end ×${f(s.ratio.p50RunEnded, 2)} (+${f(s.ratio.addedP50Ms)} ms), ` +
      `p99 ×${f(s.ratio.p99RunEnded, 2)}, throughput ×${f(s.ratio.throughput, 2)}`,
  );
  lines.push(
    `process RSS ${s.process.rssMb} MB (peak ${s.process.peakRssMb} MB, heap ${s.process.heapUsedMb} MB)` +
      (s.process.natsServerRssMb !== null ? `; nats-server RSS ${s.process.natsServerRssMb} MB` : ""),
  );
  lines.push(`machine: ${m.cpus} × ${m.cpuModel}, node ${m.node}, nats-server ${m.natsServer}, ${m.platform}`);
  lines.push(`total bench time ${s.totalSeconds} s`);
  lines.push("");
  console.log(lines.join("\n"));
}

await main();
