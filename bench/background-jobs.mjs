#!/usr/bin/env node
// Background jobs (the `process` tool, docs/tools.md): what one costs against the same command run
// by bash in the foreground, and what one channel running several at once costs.
//   node bench/background-jobs.mjs [--rounds 10] [--counts 1,4,16] [--json]     (after `npm run build`)
// Everything goes through the runner's own code: the channel's sandbox as the runner builds it
// (bwrap here, or the host executor where bubblewrap cannot run) and ChannelJobs, with jobs.jsonl
// in a real channel directory. The publish of a job's end is where the bench stops the clock
// (its NATS publish is one message: bench/bus-overhead.mjs has that cost).
//   foreground  `echo done` through executor.exec, as the bash tool runs it (the baseline)
//   job         the same command as a job: start() until its end is published (its turn's trigger)
//   start       how long start() takes to answer the model (the record written, the command spawned)
// then N jobs of `sleep 1` started at once in one channel: how long starting them all takes, when
// the last end is published (against 1 s), the processes and memory they hold on the host while
// they run, and what the runner itself holds more for them.
import { readdirSync, readFileSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { Sandbox, bwrapAvailable } = await import(join(root, "libs/sandbox/dist/index.js"));
const { WorkspaceLayout } = await import(join(root, "libs/store/dist/index.js"));
const { ChannelJobs } = await import(join(root, "services/agent-runner/dist/jobs/channel-jobs.js"));
const { channelSandbox } = await import(join(root, "services/agent-runner/dist/workspace-sandbox.js"));
const { pino } = await import("pino");

const { values: o } = parseArgs({ options: { json: { type: "boolean", default: false }, rounds: { type: "string", default: "10" }, counts: { type: "string", default: "1,4,16" }, help: { type: "boolean", short: "h", default: false } } });
if (o.help) {
  console.log("usage: node bench/background-jobs.mjs [--rounds 10] [--counts 1,4,16] [--json]");
  process.exit(0);
}
const ROUNDS = Number(o.rounds);
const COUNTS = o.counts.split(",").map(Number);
const log = (...a) => o.json || console.error(...a);
const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x) => +x.toFixed(1);

const dataDir = mkdtempSync(join(os.tmpdir(), "mom-bench-jobs-"));
const layout = new WorkspaceLayout(join(dataDir, "workspace"));
await layout.ensureWorkspace();
const kind = bwrapAvailable() ? "bwrap" : "host";
const sandbox = new Sandbox({ type: kind }, { dataDir, workspaceDir: layout.workspaceDir });

/** One channel's jobs as the runner wires them, with the end of each job noted when it is "published". */
async function channel(name, maxPerChannel) {
  const store = layout.channel({ adapter: "bench", channelId: name });
  await store.prepareFiles();
  const executor = channelSandbox(sandbox, store).executor;
  const ends = new Map();
  const waiters = new Map();
  const jobs = new ChannelJobs({
    ref: store.ref,
    store,
    executor: async () => executor,
    limits: { maxPerChannel, maxRuntimeMs: 60_000, outputKeptBytes: 64 * 1024 },
    runnerId: "bench",
    host: os.hostname(),
    publish: async (m) => {
      const id = m.metadata.job.id;
      ends.set(id, performance.now());
      waiters.get(id)?.();
    },
    refusal: () => undefined,
    log: pino({ level: "silent" }),
  });
  const ended = (id) => (ends.has(id) ? Promise.resolve() : new Promise((r) => waiters.set(id, r)));
  return { executor, jobs, ends, ended };
}

/** Processes below this one and the memory they hold (RSS, KiB), from /proc. */
function descendants() {
  const parent = new Map();
  const rss = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, "utf8");
      parent.set(Number(name), Number(/^PPid:\s+(\d+)/m.exec(status)[1]));
      rss.set(Number(name), Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0));
    } catch {
      // gone
    }
  }
  const mine = new Set([process.pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [p, pp] of parent) if (!mine.has(p) && mine.has(pp)) (mine.add(p), (grew = true));
  }
  mine.delete(process.pid);
  return { processes: mine.size, rssKiB: [...mine].reduce((n, p) => n + (rss.get(p) ?? 0), 0) };
}

// --- one job against the same command in the foreground, taking turns
const single = await channel("single", 4);
const fg = [];
const job = [];
const start = [];
for (let i = 0; i < ROUNDS + 2; i++) {
  let t0 = performance.now();
  await single.executor.exec({ command: "echo done", onData: () => {} });
  const f = performance.now() - t0;
  t0 = performance.now();
  const view = await single.jobs.start("echo done", { id: "u", username: "bench" });
  const s = performance.now() - t0;
  await single.ended(view.id);
  const j = single.ends.get(view.id) - t0;
  if (i >= 2) fg.push(f), job.push(j), start.push(s);
}
const one = { foregroundP50Ms: ms(p50(fg)), jobP50Ms: ms(p50(job)), startP50Ms: ms(p50(start)), ratio: +(p50(job) / p50(fg)).toFixed(2) };
log(`background jobs bench (${kind} sandbox, ${os.cpus().length} CPUs), ${ROUNDS} rounds`);
log(`  \`echo done\` in the foreground (bash tool's path) p50 ${one.foregroundP50Ms} ms; as a job, start to end published p50 ${one.jobP50Ms} ms (x${one.ratio}); start() answers in p50 ${one.startP50Ms} ms`);

// --- N jobs at once in one channel
const many = [];
for (const n of COUNTS) {
  const ch = await channel(`many-${n}`, n);
  global.gc?.();
  const before = process.memoryUsage().rss;
  const t0 = performance.now();
  const views = [];
  for (let i = 0; i < n; i++) views.push(await ch.jobs.start("sleep 1", { id: "u", username: "bench" }));
  const started = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 400));
  const host = descendants();
  global.gc?.();
  const runnerKiB = Math.round((process.memoryUsage().rss - before) / 1024);
  await Promise.all(views.map((v) => ch.ended(v.id)));
  const last = Math.max(...views.map((v) => ch.ends.get(v.id))) - t0;
  const r = {
    jobs: n,
    startAllMs: ms(started),
    lastEndMs: ms(last),
    overSleepMs: ms(last - 1000),
    processesPerJob: +(host.processes / n).toFixed(1),
    hostRssPerJobKiB: Math.round(host.rssKiB / n),
    runnerRssPerJobKiB: Math.round(runnerKiB / n),
  };
  many.push(r);
  log(
    `  ${String(n).padStart(2)} jobs of \`sleep 1\` at once: all started in ${r.startAllMs} ms, last end published at ${r.lastEndMs} ms (${r.overSleepMs} ms over the sleep); ` +
      `${r.processesPerJob} processes and ${r.hostRssPerJobKiB} KiB RSS per job on the host; the runner +${r.runnerRssPerJobKiB} KiB per job`,
  );
}
rmSync(dataDir, { recursive: true, force: true });
if (o.json) console.log(JSON.stringify({ sandbox: kind, one, many }, null, 2));
