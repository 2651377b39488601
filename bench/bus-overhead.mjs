#!/usr/bin/env node
// Bus overhead of mom: the same agent, with a model that answers instantly, driven once through
// NATS JetStream (ingress -> mom.in -> agent-runner -> mom.out) and once called in-process.
// See bench/README.md for what is measured and how to read the figures.
//
//   npm run bench                      # builds first, then runs this
//   node bench/bus-overhead.mjs [--json] [--channels 50] [--per-channel 20] …   (--help for all)
//
// Needs a prior `npm run build` (imports the compiled dist/ of the workspace packages) and a
// nats-server binary (PATH, /usr/sbin/nats-server, or NATS_SERVER_BIN).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(join(root, p));

const { freePort, findNatsServer, startFakeLlm } = await dist("libs/testing/dist/index.js");
const { loadConfig, createLogger } = await dist("libs/config/dist/index.js");
const { Bus } = await dist("libs/bus/dist/index.js");
// The NATS handles behind a Bus (not exported by the package: for tests and benches only).
const { connectionOf } = await dist("libs/bus/dist/bus.js");
const { startRunner, ChannelWorker, ChannelList, replyLogEntry, channelSandbox } = await dist("services/agent-runner/dist/index.js");
const { Sandbox } = await dist("libs/sandbox/dist/index.js");
const { busOptions } = await dist("libs/bus/dist/index.js");
const { ChannelAgent, resolveModel } = await dist("libs/agent/dist/index.js");
const { WorkspaceLayout, ChannelStore } = await dist("libs/store/dist/index.js");
const { qualifiedChannelId } = await dist("libs/contracts/dist/index.js");
const { ChannelLedger, SAVE_DEBOUNCE_MS } = await dist("services/agent-runner/dist/cluster/channel-ledger.js");
const { procCpuSeconds, procRssBytes } = await import("./runner-process.mjs");

// ---- options ---------------------------------------------------------------------------------


function parseArgs(argv) {
  const o = { diag: false, json: false, channels: 50, perChannel: 10, warmupRounds: 1, idle: 300, quiet: 60, rounds: 6, phase: "both", maxRuns: undefined, replyWords: 1, runTimeoutMs: 30_000 };
  const int = (name, v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${name} expects a non-negative integer, got ${JSON.stringify(v)}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--json") o.json = true;
    else if (a === "--diag") o.diag = true;
    else if (a === "--channels") o.channels = int(a, argv[++i]);
    else if (a === "--per-channel") o.perChannel = int(a, argv[++i]);
    else if (a === "--warmup-rounds") o.warmupRounds = int(a, argv[++i]);
    else if (a === "--idle") o.idle = int(a, argv[++i]);
    else if (a === "--quiet") o.quiet = int(a, argv[++i]);
    else if (a === "--rounds") o.rounds = int(a, argv[++i]);
    else if (a === "--max-concurrent-runs") o.maxRuns = int(a, argv[++i]);
    else if (a === "--reply-words") o.replyWords = int(a, argv[++i]);
    else if (a === "--spans") o.spans = argv[++i];
    else if (a === "--log") o.log = argv[++i];
    else if (a === "--phase") {
      o.phase = argv[++i];
      if (!["both", "bus", "inproc"].includes(o.phase)) throw new Error(`--phase expects both, bus or inproc, got ${JSON.stringify(o.phase)}`);
    } else if (a === "-h" || a === "--help") {
      console.log(
        "usage: node bench/bus-overhead.mjs [--json] [--diag] [--channels N] [--per-channel N] [--warmup-rounds N] [--idle N] [--quiet N] [--rounds N] [--max-concurrent-runs N] [--reply-words N] [--phase both|bus|inproc] [--spans FILE] [--log FILE]",
      );
      process.exit(0);
    } else throw new Error(`unknown argument ${a} (try --help)`);
  }
  if (o.channels < 1 || o.perChannel < 1) throw new Error("--channels and --per-channel must be >= 1");
  if (o.rounds < 1) throw new Error("--rounds must be >= 1");
  // The runner caps concurrent runs (config runner.maxConcurrentRuns, default 16); the in-process
  // side has no cap, so by default the runner gets as many slots as there are channels in flight.
  o.maxRuns ??= o.channels;
  if (o.maxRuns < 1) throw new Error("--max-concurrent-runs must be >= 1");
  if (o.replyWords < 1) throw new Error("--reply-words must be >= 1");
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
  return { n: s.length, p25: percentile(s, 25), p50: percentile(s, 50), p75: percentile(s, 75), p90: percentile(s, 90), p99: percentile(s, 99), mean, max: s.at(-1) ?? NaN, min: s[0] ?? NaN };
}

const round = (x, d = 2) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : null);
const mb = (bytes) => round(bytes / 1024 / 1024, 1);

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
  // --log FILE: the server's own log goes next to the runner's (slow consumers, stalls).
  const logArgs = opts.log ? ["-l", `${opts.log}.nats-server`] : [];
  const child = spawn(bin, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir, ...logArgs], { stdio: "ignore" });
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


// ---- --diag: timestamps from inside the in-process runner -----------------------------------

/**
 * Wraps (at runtime, in this process only) the runner's ChannelWorker.accept / execute and the
 * store's appendLog, to see where a message waits between "delivered to the runner" and "run
 * started". Only with --diag; the bench never changes the runner's code.
 */
let diagMarks; // --diag: the marks of instrumentRunner(), for the in-process mode's figures too

/** --diag: how far a message got inside the runner, in ms after it was sent (for a run that failed). */
function diagMarksOf(r) {
  const m = diagMarks?.get(r.id);
  if (!m) return {};
  return { reached: Object.fromEntries(Object.entries(m).map(([k, t]) => [k, Math.round(t - r.t0)])) };
}

function instrumentRunner() {
  const marks = new Map(); // messageId -> {accept, logged, execute}
  const wrap = (proto, name, before, after) => {
    const orig = proto[name];
    proto[name] = function (...args) {
      before?.call(this, ...args);
      const r = orig.apply(this, args);
      if (after && r && typeof r.then === "function") r.then(() => after.call(this, ...args), () => {});
      return r;
    };
    return () => (proto[name] = orig);
  };
  const mark = (id, k) => {
    if (typeof id !== "string") return;
    const m = marks.get(id) ?? {};
    m[k] ??= performance.now();
    marks.set(id, m);
  };
  const publishMs = { in: [], out: [] };
  const runToMessage = new Map();
  const origPublish = Bus.prototype.publish;
  Bus.prototype.publish = function (subject, ...rest) {
    const t = performance.now();
    const ev = rest[0]?.event;
    if (ev?.type === "run_started") runToMessage.set(rest[0].runId, ev.trigger?.messageId);
    if (ev?.type === "run_ended") mark(runToMessage.get(rest[0].runId), "endPublished");
    const r = origPublish.call(this, subject, ...rest);
    const kind = subject.split(".")[1];
    r.then(() => publishMs[kind]?.push(performance.now() - t), () => {});
    return r;
  };
  const undo = [
    () => (Bus.prototype.publish = origPublish),
    wrap(ChannelWorker.prototype, "deliver", (_seq, message) => mark(message?.id, "accept")),
    wrap(ChannelWorker.prototype, "execute", (item) => mark(item?.message?.id, "execute"), (item) => mark(item?.message?.id, "executeDone")),
    wrap(ChannelStore.prototype, "appendLog", (e) => mark(e?.metadata?.triggerId ?? e?.id, e?.isBot ? "replyLogCalled" : "appendLogCalled"), (e) => mark(e?.metadata?.triggerId ?? e?.id, e?.isBot ? "replyLogged" : "logged")),
    wrap(ChannelLedger.prototype, "runStarting", (run) => mark(run?.messageId, "recording"), (run) => mark(run?.messageId, "recorded")),
    wrap(ChannelAgent.prototype, "run", (trigger) => mark(trigger?.id, "agentRun"), (trigger) => mark(trigger?.id, "agentDone")),
  ];
  return { marks, publishMs, restore: () => undo.forEach((u) => u()) };
}

// ---- the load generator on the bus ----------------------------------------------------------

/**
 * Publishes ChannelMessages on mom.in and watches mom.out (core NATS subscription on the whole
 * out wildcard) to time each message: t0 just before publish, t1 first outbound event of its run,
 * t2 its run_ended.
 */
function busDriver(bus, tag) {
  const byMessage = new Map(); // messageId -> record
  const runToMessage = new Map(); // runId -> messageId
  const orphans = new Map(); // runId -> {t, events} seen before any event naming its trigger (not expected)
  const sub = connectionOf(bus).nc.subscribe(bus.subjects.wildcard("out"));
  let undecodable = 0;
  // A dropped connection loses what core NATS delivered meanwhile: a run_ended missed that way
  // reads as a run that timed out, so the bench says when it happened.
  const connectionEvents = [];
  void (async () => {
    for await (const s of connectionOf(bus).nc.status()) if (s.type === "disconnect" || s.type === "reconnect" || s.type === "slowConsumer") connectionEvents.push(s.type);
  })().catch(() => {});
  const pump = (async () => {
    for await (const m of sub) {
      const t = performance.now();
      const wall = Date.now();
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
      if (ev?.type === "run_started") rec.startedEmitLagMs = Date.parse(out.ts) - rec.d0;
      if (ev?.type === "run_ended") {
        rec.endedDeliveryLagMs = wall - Date.parse(out.ts);
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
    const rec = { id, channel: channelId, t0: 0, d0: 0, t1: undefined, t2: undefined, events: 0, stopReason: undefined };
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
    rec.d0 = Date.now();
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
    get connectionEvents() {
      return connectionEvents;
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

/**
 * A full garbage collection, so that no round pays for the garbage of the one before it (a major
 * GC of the few hundred MB both modes' sessions hold would land in whichever round triggers it).
 */
const collectGarbage = (() => {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc");
  return () => gc();
})();

/**
 * Before a measured round: lets what the previous round left behind finish (the runner saves a
 * channel's progress 250 ms after its last run), then collects the garbage, so neither lands in
 * the other mode's figures.
 */
async function settle() {
  await new Promise((r) => setTimeout(r, 500));
  collectGarbage();
}

/** When each measured round ran, on the monotonic clock a CPU profile's timestamps use (--spans). */
const spans = [];
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** Event-loop delay over a stretch of the bench; call the result to stop and read it. */
function loopDelay() {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  return () => {
    h.disable();
    return { p50: h.percentile(50) / 1e6, p90: h.percentile(90) / 1e6, p99: h.percentile(99) / 1e6, mean: h.mean / 1e6, max: h.max / 1e6 };
  };
}

/**
 * One way of handling a message (the bus, or the agent called in-process). `send(c)` handles one
 * message in channel c and resolves with its record {t0, t1, t2, events, stopReason, timedOut?, …}
 * once its run has ended. Every measured stretch of a mode is kept, so that the rounds of both
 * modes can be taken in turns and pooled at the end.
 */
function mode(name, ctx, send, extraStats = () => ({}), sampler) {
  const resetLlm = () => {
    ctx.llm.reset();
    ctx.llm.setFallback(ctx.fallback);
  };
  const alone = { idle: [], quiet: [] };
  const load = { records: [], wallMs: 0, cpuSec: 0, natsCpuSec: 0, llmRequests: 0, delays: [], samples: [], rounds: [] };
  return {
    name,
    /** Creates every channel's session (excluded from the figures). */
    async warmUp() {
      say(`${name}: warm-up ${opts.channels * opts.warmupRounds} message(s) (${opts.warmupRounds} per channel: creates each channel's session)…`);
      const warm = [];
      await perChannelLoop(opts.channels, opts.warmupRounds, async (c) => warm.push(await send(c)));
      const unanswered = warm.filter((r) => r.timedOut).length;
      if (unanswered > 0) throw new Error(`${name}: ${unanswered} of ${warm.length} warm-up messages got no run_ended within ${opts.runTimeoutMs} ms`);
      resetLlm();
    },
    resetLlm,
    /** One message of an idle or quiet phase (runAlone): nothing else of this bench in flight. */
    async aloneMessage(c, phase) {
      const fromUs = nowUs();
      const rec = await send(c);
      spans.push({ mode: name, phase, fromUs, toUs: nowUs() });
      alone[phase].push(rec);
      return rec;
    },
    /** A load round whose figures are not kept. */
    async unmeasuredLoad() {
      say(`${name}: load warm-up, ${opts.channels} channels × ${opts.perChannel} messages (not measured)…`);
      await settle();
      await perChannelLoop(opts.channels, opts.perChannel, send);
      resetLlm();
    },
    /** One message in flight per channel, every channel at once. */
    async loadRound() {
      say(`${name}: load, ${opts.channels} channels × ${opts.perChannel} messages, one in flight per channel…`);
      await settle();
      const cpu0 = process.cpuUsage();
      const natsCpu0 = procCpuSeconds(ctx.nats.pid);
      const stopLoop = loopDelay();
      const stopSampler = sampler?.();
      const start = performance.now();
      const fromUs = nowUs();
      const records = [];
      await perChannelLoop(opts.channels, opts.perChannel, async (c) => records.push(await send(c)));
      spans.push({ mode: name, phase: "load", fromUs, toUs: nowUs() });
      const wallMs = performance.now() - start;
      load.wallMs += wallMs;
      load.records.push(...records);
      load.delays.push(stopLoop());
      const samples = await stopSampler?.();
      if (samples) load.samples.push(samples);
      const cpu = process.cpuUsage(cpu0);
      const natsCpu1 = procCpuSeconds(ctx.nats.pid);
      load.llmRequests += ctx.llm.requests.length;
      resetLlm();
      load.cpuSec += (cpu.user + cpu.system) / 1e6;
      load.rounds.push({ msgsPerSec: (records.length / wallMs) * 1000, nodeCpuMsPerMsg: (cpu.user + cpu.system) / 1e3 / records.length });
      load.natsCpuSec = natsCpu0 !== undefined && natsCpu1 !== undefined && load.natsCpuSec !== undefined ? load.natsCpuSec + (natsCpu1 - natsCpu0) : undefined;
    },
    /** The figures of every round of this mode, pooled. */
    result() {
      const summarise = (records, wallMs, extra) => {
        const ok = records.filter((r) => !r.timedOut && r.stopReason === "stop");
        return {
          messages: records.length,
          completed: ok.length,
          timedOut: records.filter((r) => r.timedOut).length,
          failed: records
            .filter((r) => r.timedOut || r.stopReason !== "stop")
            .map((r) => ({ id: r.id, ...(r.timedOut ? { timedOut: true, acked: r.tAck !== undefined, events: r.events } : { stopReason: r.stopReason }), ...diagMarksOf(r) }))
            .slice(0, 5),
          wallMs,
          msgsPerSec: (ok.length / wallMs) * 1000,
          firstEvent: stats(ok.map((r) => r.t1 - r.t0)),
          runEnded: stats(ok.map((r) => r.t2 - r.t0)),
          eventsPerRun: stats(ok.map((r) => r.events)),
          ...extraStats(ok),
          ...extra,
        };
      };
      // The event-loop delay of the worst round (p50 over rounds would hide one bad stretch).
      const worst = (delays) => delays.reduce((a, b) => (b.p99 > a.p99 ? b : a));
      const n = load.records.length;
      return {
        idle: alone.idle.length ? summarise(alone.idle, NaN) : undefined,
        quiet: alone.quiet.length ? summarise(alone.quiet, NaN) : undefined,
        load: summarise(load.records, load.wallMs, {
          llmRequests: load.llmRequests,
          eventLoopDelay: worst(load.delays),
          ...(load.samples.length && { consumerSamples: load.samples.at(-1) }),
          nodeCpuSec: load.cpuSec,
          nodeCpuMsPerMsg: (load.cpuSec * 1000) / n,
          natsCpuSec: load.natsCpuSec,
          natsCpuMsPerMsg: load.natsCpuSec !== undefined ? (load.natsCpuSec * 1000) / n : undefined,
          rounds: load.rounds,
        }),
      };
    },
  };
}

// ---- the bus run -----------------------------------------------------------------------------

async function busMode(ctx) {
  const { loaded, url, logger } = ctx;
  const runner = await startRunner({ loaded, bus: busOptions(loaded, url, "agent-runner", logger), logger });
  const bus = await Bus.connect(busOptions(loaded, url, "bench-load", logger));
  await bus.provision();
  const driver = busDriver(bus, `bus-${randomBytes(3).toString("hex")}`);
  const inst = opts.diag ? instrumentRunner() : undefined;
  diagMarks = inst?.marks;
  // --diag: sample the runner's durable consumer on MOM_IN every 50 ms during the load.
  const sampler = !opts.diag
    ? undefined
    : () => {
        const stream = bus.subjects.stream("IN");
        const seen = { samples: 0, numPending: [], ackPending: [], waiting: [] };
        let stop = false;
        const loop = (async () => {
          while (!stop) {
            try {
              const ci = await connectionOf(bus).jsm.consumers.info(stream, "agent-runner");
              seen.samples++;
              seen.numPending.push(ci.num_pending);
              seen.ackPending.push(ci.num_ack_pending);
              seen.waiting.push(ci.num_waiting);
            } catch {
              // ignore
            }
            await new Promise((r) => setTimeout(r, 50));
          }
        })();
        return async () => {
          stop = true;
          await loop;
          return {
            samples: seen.samples,
            numPending: stats(seen.numPending),
            numAckPending: stats(seen.ackPending),
            numWaiting: stats(seen.waiting),
          };
        };
      };
  const m = mode(
    "bus",
    ctx,
    (c) => driver.send(c),
    (ok) => ({
      publishAck: stats(ok.map((r) => r.tAck - r.t0)),
      // Wall-clock (ms resolution): the runner stamps each event's `ts` when it emits it.
      publishToRunStartedEmit: stats(ok.map((r) => r.startedEmitLagMs)),
      runnerDuration: stats(ok.map((r) => r.runnerDurationMs)),
      runEndedEmitToReceived: stats(ok.map((r) => r.endedDeliveryLagMs)),
      ...(inst && {
        diag: {
          publishToAccept: stats(ok.map((r) => inst.marks.get(r.id)?.accept - r.t0)),
          acceptToLogged: stats(ok.map((r) => inst.marks.get(r.id)?.logged - inst.marks.get(r.id)?.accept)),
          loggedToExecute: stats(ok.map((r) => inst.marks.get(r.id)?.execute - inst.marks.get(r.id)?.logged)),
          executeToRecording: stats(ok.map((r) => inst.marks.get(r.id)?.recording - inst.marks.get(r.id)?.execute)),
          recordRun: stats(ok.map((r) => inst.marks.get(r.id)?.recorded - inst.marks.get(r.id)?.recording)),
          recordedToAgentRun: stats(ok.map((r) => inst.marks.get(r.id)?.agentRun - inst.marks.get(r.id)?.recorded)),
          agentRun: stats(ok.map((r) => inst.marks.get(r.id)?.agentDone - inst.marks.get(r.id)?.agentRun)),
          agentDoneToReplyLogged: stats(ok.map((r) => inst.marks.get(r.id)?.replyLogged - inst.marks.get(r.id)?.agentDone)),
          replyLoggedToEndPublished: stats(ok.map((r) => inst.marks.get(r.id)?.endPublished - inst.marks.get(r.id)?.replyLogged)),
          endPublishedToReceived: stats(ok.map((r) => r.t2 - inst.marks.get(r.id)?.endPublished)),
          runEndedReceivedToExecuteDone: stats(ok.map((r) => inst.marks.get(r.id)?.executeDone - r.t2)),
          publishOut: stats(inst.publishMs.out.splice(0)),
          publishIn: stats(inst.publishMs.in.splice(0)),
        },
      }),
    }),
    sampler,
  );
  return {
    ...m,
    result() {
      return { ...m.result(), undecodable: driver.undecodable, orphanRuns: driver.orphanRuns, connectionEvents: driver.connectionEvents };
    },
    async close() {
      inst?.restore();
      await driver.close();
      await runner.close();
      await bus.drain();
    },
  };
}

// ---- the in-process run ----------------------------------------------------------------------

async function inProcessMode(ctx) {
  const { loaded } = ctx;
  const dataDir = join(ctx.tmp, "inproc");
  const workspaceDir = join(dataDir, "workspace");
  mkdirSync(workspaceDir, { recursive: true });
  const layout = new WorkspaceLayout(workspaceDir);
  await layout.ensureWorkspace();
  const resolved = resolveModel("fake", "fake-model", loaded.paths);
  const agents = new Map();
  const tag = `inproc-${randomBytes(3).toString("hex")}`;
  const sandbox = new Sandbox(loaded.config.sandbox, { dataDir, workspaceDir });
  const channelList = new ChannelList(layout, createLogger("bench", { level: "warn" }));
  let n = 0;

  // The same agent the runner's ChannelWorker creates (same options), one per channel.
  function agentFor(ref) {
    const key = qualifiedChannelId(ref);
    let a = agents.get(key);
    if (!a) {
      const store = layout.channel(ref);
      a = ChannelAgent.create({
        qualifiedChannelId: key,
        workspaceDir,
        store,
        sandbox: channelSandbox(sandbox, store),
        resolved,
        thinkingLevel: loaded.config.thinkingLevel,
        agentDir: join(dataDir, ".pi"),
        listChannels: () => channelList.get(),
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
      await store.appendLog(replyLogEntry(`${id}:run`, { id }, outcome.finalText));
    }
    rec.t2 = performance.now();
    rec.stopReason = outcome.stopReason;
    return rec;
  }

  return {
    ...mode("in-process", ctx, send, (ok) => {
      if (!diagMarks) return {};
      const m = (r) => diagMarks.get(r.id) ?? {};
      return {
        diag: {
          logMessage: stats(ok.map((r) => m(r).logged - r.t0)),
          agentRun: stats(ok.map((r) => m(r).agentDone - m(r).agentRun)),
          logReply: stats(ok.map((r) => m(r).replyLogged - m(r).agentDone)),
        },
      };
    }),
    async close() {
      for (const a of agents.values()) (await a.catch(() => undefined))?.agent.dispose();
    },
  };
}

/**
 * Latency of a message on its own: `slots` slots, each one message of every mode (bus then
 * in-process, or the other way round, alternately), to the same channel, one at a time. Both of a
 * slot's messages find the machine at the same speed: a shared host's speed drifts over seconds,
 * which moved whole rounds of one mode against the other's by up to ±3 ms.
 * - idle: the slots back to back. The runner's debounced progress save of a channel (its
 *   SAVE_DEBOUNCE_MS after the run) lands on a later message, of either mode.
 * - quiet: each slot SAVE_DEBOUNCE_MS + 50 ms long, the rest of it doing nothing: every message
 *   finds both processes asleep, as in a channel where a mention comes now and then.
 * Resolves with each slot's bus − in-process difference (ms), when both modes ran.
 */
async function runAlone(modes, phase, slots) {
  if (slots === 0) return undefined;
  const slotMs = phase === "quiet" ? SAVE_DEBOUNCE_MS + 50 : 0;
  say(`${phase} latency: ${slots} slot(s), one message of each mode in each${slotMs ? `, ${slotMs} ms apart` : ""}…`);
  await settle();
  const stopLoop = loopDelay();
  const differences = [];
  for (let i = 0; i < slots; i++) {
    const start = performance.now();
    const order = i % 2 === 0 ? modes : [...modes].reverse();
    const recs = {};
    for (const m of order) recs[m.name] = await m.aloneMessage(i % opts.channels, phase);
    const [b, p] = [recs.bus, recs["in-process"]];
    if (b && p && !b.timedOut && !p.timedOut) differences.push(b.t2 - b.t0 - (p.t2 - p.t0));
    if (slotMs) await new Promise((r) => setTimeout(r, Math.max(0, start + slotMs - performance.now())));
  }
  modes[0].resetLlm();
  return { differences: modes.length === 2 ? stats(differences) : undefined, eventLoopDelay: stopLoop() };
}

/**
 * Both modes live side by side in this process; each is warmed up, then come the single messages
 * (runAlone), then the load rounds, taken in turns, ABBA (bus, in-process, in-process, bus, …).
 * Measured one after the other, the second mode would run on code the first had already made hot
 * (the agent, pi, the fake model are shared): in-process after the bus measured ~25% less CPU per
 * message than in-process alone.
 */
async function runModes(ctx) {
  const modes = [];
  try {
    if (opts.phase !== "inproc") modes.push(await busMode(ctx));
    if (opts.phase !== "bus") modes.push(await inProcessMode(ctx));
    for (const m of modes) await m.warmUp();
    const idle = await runAlone(modes, "idle", opts.idle);
    const quiet = await runAlone(modes, "quiet", opts.quiet);
    // The first load after the quiet stretch ran slower than any after it (bus rounds: 8.9 ms CPU per
    // message against 6.4), which only the mode going first would pay.
    for (const m of modes) await m.unmeasuredLoad();
    for (let r = 0; r < opts.rounds; r++) {
      const order = r % 2 === 0 ? modes : [...modes].reverse();
      for (const m of order) await m.loadRound();
    }
    const result = (name) => modes.find((m) => m.name === name)?.result();
    if (opts.spans) writeFileSync(opts.spans, JSON.stringify(spans));
    return { bus: result("bus"), inproc: result("in-process"), idle, quiet };
  } finally {
    for (const m of modes) await m.close();
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
    // The fake streams one delta per word: --reply-words N gives N message_update text deltas per run.
    const fallback = { text: Array(opts.replyWords).fill("ok").join(" "), usage: { input: 10, output: opts.replyWords } };
    llm.setFallback(fallback);

    const dataDir = join(tmp, "data");
    mkdirSync(dataDir);
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(
      join(dataDir, "config.json"),
      JSON.stringify({
        model: "fake/fake-model",
        nats: { url: nats.url, namespace: "bench" },
        // The runner dead-letters messages of adapters config.json does not name.
        adapters: { bench: { type: "cli" } },
        runner: { maxConcurrentRuns: opts.maxRuns },
        log: { level: "error" },
      }),
    );
    const loaded = loadConfig(dataDir, {});
    // --log: the runner's warnings and errors go to a file, to explain a run that timed out.
    const logger = opts.log
      ? createLogger("bench", { level: "warn", destination: openSync(opts.log, "w") })
      : createLogger("bench", { level: "error" });
    const ctx = { tmp, loaded, url: nats.url, logger, llm, fallback, nats };

    const t0 = performance.now();
    const { bus, inproc, idle, quiet } = await runModes(ctx);
    const natsRss = procRssBytes(nats.pid);
    const mem = process.memoryUsage();
    const cpus = os.cpus();
    const ratio = (x, y) => (x !== undefined && y !== undefined ? x / y : undefined);
    const summary = {
      load: {
        channels: opts.channels,
        messagesPerChannel: opts.perChannel,
        messages: opts.channels * opts.perChannel,
        rounds: opts.rounds,
        warmupMessages: opts.channels * opts.warmupRounds,
        idleSlots: opts.idle,
        quietSlots: opts.quiet,
        inFlight: `at most ${opts.channels}: one per channel, the next message of a channel is sent when the previous one's run has ended`,
        runnerMaxConcurrentRuns: opts.maxRuns,
        model: `fake/fake-model (OpenAI-compatible fake on loopback, instant reply: ${opts.replyWords === 1 ? "'ok'" : `${opts.replyWords} words, one stream delta each`})`,
      },
      bus,
      inProcess: inproc,
      eventLoopDelay: { idle: idle?.eventLoopDelay, quiet: quiet?.eventLoopDelay },
      ratio: {
        idleP50RunEnded: ratio(bus?.idle?.runEnded.p50, inproc?.idle?.runEnded.p50),
        idleAddedP50Ms: bus?.idle && inproc?.idle ? bus.idle.runEnded.p50 - inproc.idle.runEnded.p50 : undefined,
        // Each slot's bus − in-process: the median and the middle half of them.
        idleSlotDifferenceMs: idle?.differences,
        quietAddedP50Ms: bus?.quiet && inproc?.quiet ? bus.quiet.runEnded.p50 - inproc.quiet.runEnded.p50 : undefined,
        quietSlotDifferenceMs: quiet?.differences,
        loadP50RunEnded: ratio(bus?.load.runEnded.p50, inproc?.load.runEnded.p50),
        loadP99RunEnded: ratio(bus?.load.runEnded.p99, inproc?.load.runEnded.p99),
        loadThroughput: ratio(bus?.load.msgsPerSec, inproc?.load.msgsPerSec),
        loadCpuPerMsg: ratio(bus?.load.nodeCpuMsPerMsg, inproc?.load.nodeCpuMsPerMsg),
        byRound: bus && inproc ? roundPairs(bus, inproc) : undefined,
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
      totalSeconds: (performance.now() - t0) / 1000,
    };
    if (opts.json) console.log(JSON.stringify(summary, (k, v) => (typeof v === "number" ? round(v, 3) : v), 2));
    else printTable(summary);
    const problems = [];
    for (const [name, r] of [["bus", bus], ["in-process", inproc]]) {
      for (const part of [r?.idle, r?.quiet, r?.load]) {
        if (part && part.completed !== part.messages) {
          problems.push(`${name}: ${part.messages - part.completed} of ${part.messages} runs did not end with stopReason "stop" (${part.timedOut} timed out; e.g. ${JSON.stringify(part.failed)})`);
        }
      }
    }
    if (bus?.connectionEvents?.length) problems.push(`bus: the load generator's connection had ${bus.connectionEvents.join(", ")} (events sent meanwhile were lost to it)`);
    if (bus?.orphanRuns) problems.push(`bus: ${bus.orphanRuns} run(s) on mom.out could not be matched to a message`);
    for (const p of problems) console.error(`bench: ${p}`);
    process.exitCode = problems.length ? 1 : 0;
  } finally {
    await cleanup();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/**
 * The ratios of each round's two turns (bus round i against in-process round i, run back to back),
 * and their medians: a machine whose speed drifts during the bench (a shared host) moves both turns
 * of a pair alike, so the median of the pairs wanders less from run to run than the pooled figures.
 */
function roundPairs(bus, inproc) {
  const pairs = bus.load.rounds.map((b, i) => {
    const p = inproc.load.rounds[i];
    return {
      cpuPerMsg: b.nodeCpuMsPerMsg / p.nodeCpuMsPerMsg,
      throughput: b.msgsPerSec / p.msgsPerSec,
    };
  });
  const median = (xs) => {
    const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
    return v.length === 0 ? undefined : v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  };
  return {
    pairs,
    median: {
      cpuPerMsg: median(pairs.map((p) => p.cpuPerMsg)),
      throughput: median(pairs.map((p) => p.throughput)),
    },
  };
}

function printTable(s) {
  const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "—");
  const row = (cells, widths) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join("  ");
  const rule = (widths) => "-".repeat(widths.reduce((a, b) => a + b + 2, -2));
  const { bus, inProcess: ip, machine: m, load } = s;
  const lines = [""];
  lines.push(`mom bus overhead — same agent, instant fake model, through NATS JetStream vs called in-process`);
  lines.push(`load: ${load.messages} messages over ${load.channels} channels (${load.messagesPerChannel} each) per round; in flight ${load.inFlight}`);
  lines.push(`rounds: ${load.rounds} per mode, the modes taking turns (bus, in-process, in-process, bus, …), figures pooled over the rounds`);
  lines.push(`model: ${load.model}`);
  lines.push(`runner.maxConcurrentRuns: ${load.runnerMaxConcurrentRuns}; in-process runs are not capped`);
  lines.push(`idle: ${load.idleSlots} slots back to back, quiet: ${load.quietSlots} slots ${SAVE_DEBOUNCE_MS + 50} ms apart; one message per mode in each; warm-up: ${load.warmupMessages} messages per mode, excluded`);
  lines.push("");

  const w = [38, 8, 8, 8, 8, 8];
  lines.push(row(["latency (ms)", "p50", "p90", "p99", "mean", "max"], w));
  lines.push(rule(w));
  const st = (label, x) => x && lines.push(row([label, f(x.p50), f(x.p90), f(x.p99), f(x.mean), f(x.max)], w));
  for (const [title, key] of [["idle (one at a time)", "idle"], [`quiet (one at a time, ${SAVE_DEBOUNCE_MS + 50} ms apart)`, "quiet"], [`load (${load.channels} in flight)`, "load"]]) {
    if (!bus?.[key] && !ip?.[key]) continue;
    lines.push(`${title}:`);
    st("  bus: publish → JetStream ack", bus?.[key]?.publishAck);
    st("  bus: publish → first event", bus?.[key]?.firstEvent);
    st("  bus: publish → run_ended", bus?.[key]?.runEnded);
    st("   · publish → run_started emitted ¹", bus?.[key]?.publishToRunStartedEmit);
    st("   · runner-side durationMs ¹", bus?.[key]?.runnerDuration);
    st("   · run_ended emitted → received ¹", bus?.[key]?.runEndedEmitToReceived);
    if (bus?.[key]?.diag) {
      st("   · --diag publish → worker.accept", bus[key].diag.publishToAccept);
      st("   · --diag accept → logged", bus[key].diag.acceptToLogged);
      st("   · --diag logged → execute", bus[key].diag.loggedToExecute);
      st("   · --diag execute → record run", bus[key].diag.executeToRecording);
      st("   · --diag record run (KV CAS)", bus[key].diag.recordRun);
      st("   · --diag recorded → agent.run", bus[key].diag.recordedToAgentRun);
      st("   · --diag agent.run", bus[key].diag.agentRun);
      st("   · --diag agent done → reply logged", bus[key].diag.agentDoneToReplyLogged);
      st("   · --diag reply logged → run_ended sent", bus[key].diag.replyLoggedToEndPublished);
      st("   · --diag run_ended sent → received", bus[key].diag.endPublishedToReceived);
      st("   · --diag run_ended rcvd → exec done", bus[key].diag.runEndedReceivedToExecuteDone);
      st("   · --diag js.publish mom.in (await)", bus[key].diag.publishIn);
      st("   · --diag js.publish mom.out (await)", bus[key].diag.publishOut);
    }
    st("  in-process: prompt → first event", ip?.[key]?.firstEvent);
    st("  in-process: prompt → run end", ip?.[key]?.runEnded);
    if (ip?.[key]?.diag) {
      st("   · --diag log the message", ip[key].diag.logMessage);
      st("   · --diag agent.run", ip[key].diag.agentRun);
      st("   · --diag log the reply", ip[key].diag.logReply);
    }
    if (key !== "load") {
      st("  bus − in-process, slot by slot", s.ratio[`${key}SlotDifferenceMs`]);
      st("  event-loop delay", s.eventLoopDelay[key]);
    } else {
      st("  event-loop delay, bus phase", bus?.[key]?.eventLoopDelay);
      st("  event-loop delay, in-process phase", ip?.[key]?.eventLoopDelay);
    }
  }
  const cs = bus?.load?.consumerSamples;
  if (cs) {
    const f0 = (x) => `p50 ${f(x.p50, 0)} / max ${f(x.max, 0)}`;
    lines.push(`  --diag, runner's MOM_IN consumer (${cs.samples} samples): num_pending ${f0(cs.numPending)}, ack_pending ${f0(cs.numAckPending)}, waiting pulls ${f0(cs.numWaiting)}`);
  }
  lines.push("¹ from the runner's wall-clock `ts`/`durationMs` stamps (1 ms resolution)");
  lines.push("");

  const w2 = [38, 12, 12];
  const bl = bus?.load;
  const il = ip?.load;
  const both = (label, fn) => lines.push(row([label, bl ? fn(bl) : "—", il ? fn(il) : "—"], w2));
  lines.push(row([`throughput under load`, "bus", "in-process"], w2));
  lines.push(rule(w2));
  both("runs completed", (x) => `${x.completed}/${x.messages}`);
  both("wall time (s)", (x) => f(x.wallMs / 1000, 2));
  both("messages/s", (x) => f(x.msgsPerSec));
  both("events per run (p50)", (x) => f(x.eventsPerRun.p50, 0));
  both("node CPU ms per message", (x) => f(x.nodeCpuMsPerMsg, 2));
  both("nats-server CPU ms per message", (x) => (x === bl && x.natsCpuMsPerMsg !== undefined ? f(x.natsCpuMsPerMsg, 2) : "—"));
  both("LLM requests", (x) => String(x.llmRequests));
  lines.push("");

  const r = s.ratio;
  if (bus && ip) {
    lines.push(
      `bus / in-process:  idle p50 ×${f(r.idleP50RunEnded, 2)} (+${f(r.idleAddedP50Ms)} ms)   ` +
        `load p50 ×${f(r.loadP50RunEnded, 2)}  p99 ×${f(r.loadP99RunEnded, 2)}   ` +
        `throughput ×${f(r.loadThroughput, 2)}   CPU/msg ×${f(r.loadCpuPerMsg, 2)}   (pooled over the rounds)`,
    );
    const br = r.byRound;
    const list = (k, d, sign = "×") => br.pairs.map((p) => `${sign}${f(p[k], d)}`).join(" ");
    const d = r.idleSlotDifferenceMs;
    if (d) lines.push(`idle, slot by slot: bus − in-process median +${f(d.p50)} ms (middle half +${f(d.p25)} to +${f(d.p75)} ms)`);
    const q = r.quietSlotDifferenceMs;
    if (q) lines.push(`quiet, slot by slot: bus − in-process median +${f(q.p50)} ms (middle half +${f(q.p25)} to +${f(q.p75)} ms); p50 +${f(r.quietAddedP50Ms)} ms`);
    lines.push(`load round by round: throughput ${list("throughput", 2)}   CPU/msg ${list("cpuPerMsg", 2)}`);
    lines.push(`median of rounds:  throughput ×${f(br.median.throughput, 2)}   CPU/msg ×${f(br.median.cpuPerMsg, 2)}`);
  }
  lines.push(
    `process RSS ${s.process.rssMb} MB at the end (peak ${s.process.peakRssMb} MB, heap ${s.process.heapUsedMb} MB)` +
      (s.process.natsServerRssMb !== null ? `; nats-server RSS ${s.process.natsServerRssMb} MB` : ""),
  );
  lines.push(`machine: ${m.cpus} × ${m.cpuModel}, node ${m.node}, nats-server ${m.natsServer}, ${m.platform}`);
  lines.push(`bench time ${f(s.totalSeconds)} s`);
  lines.push("");
  console.log(lines.join("\n"));
}

await main();
