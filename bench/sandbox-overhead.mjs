#!/usr/bin/env node
// What a sandbox costs per tool call: the same calls through each executor mom has here.
//   node bench/sandbox-overhead.mjs [--calls N] [--json]     (after `npm run build`)
// Calls, each timed from the tool's point of view (executor.exec / ConfinedFiles.readFile):
//   echo       `echo hi` through executor.exec
//   cat 10 MB  `cat` of a 10 MB file through executor.exec (10 MB streamed out of the sandbox)
//   read 10 MB the read tool's file access (ConfinedFiles.readFile) of the same file
// plus a baseline: `bash -c 'echo hi'` spawned directly with child_process (no executor).
// docker is measured when a Docker engine of the bench's own can be started (root, docker.io,
// busybox-static), against an image made locally (busybox + the host's bash); `--no-docker` skips it.
//
// Then the confinement of issue 30 (docs/sandbox.md): the same bwrap calls and file-tool calls
// with it ("confined": the Sandbox as the runner builds it — commands as sandbox.uid when the
// runner is root, memory cgroup or RLIMIT_DATA, RLIMIT_FSIZE, the channel disk check, mode-bit
// checks as that uid in the file tools) and without it ("unconfined": a BwrapExecutor with the
// pids cgroup only, commands root in the sandbox, file tools without the uid check), taking turns
// in the same run; printed as the extra milliseconds per call and the ratio.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { Sandbox, BwrapExecutor, ConfinedFiles, channelView, DEFAULT_SHARED, DEFAULT_MAX_PROCESSES, pidsCgroupBase, bwrapAvailable } = await import(join(root, "libs/sandbox/dist/index.js"));
const { startTestDockerEngine } = await import(join(root, "libs/testing/dist/index.js"));

const args = process.argv.slice(2);
if (args.includes("--help")) {
  console.log("usage: node bench/sandbox-overhead.mjs [--calls N (default 50)] [--no-docker] [--json]");
  process.exit(0);
}
const callsAt = args.indexOf("--calls");
const CALLS = callsAt >= 0 ? Number(args[callsAt + 1]) : 50;
const JSON_OUT = args.includes("--json");
const MB = 1024 * 1024;

const dataDir = mkdtempSync(join(os.tmpdir(), "mom-bench-sandbox-"));
const workspaceDir = join(dataDir, "workspace");
const channelDir = join(workspaceDir, "channels", "bench", "c1");
mkdirSync(join(channelDir, "notes"), { recursive: true });
writeFileSync(join(channelDir, "ten-mb.txt"), `${"x".repeat(99)}\n`.repeat((10 * MB) / 100));

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { p50: at(0.5), p90: at(0.9), mean: s.reduce((a, b) => a + b, 0) / s.length };
}

// The machine's load changes from second to second (other processes, CPU frequency): the
// executors take turns call by call, so each one meets the same conditions.
async function timeInTurns(fns) {
  for (const fn of Object.values(fns)) await fn(); // warm-up
  const samples = Object.fromEntries(Object.keys(fns).map((k) => [k, []]));
  for (let i = 0; i < CALLS; i++) {
    for (const [k, fn] of Object.entries(fns)) {
      const t0 = performance.now();
      await fn();
      samples[k].push(performance.now() - t0);
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, stats(v)]));
}

function spawnBash(command) {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", command], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.resume();
    child.stderr.resume();
    child.on("error", reject);
    child.on("close", resolve);
  });
}

async function exec(executor, command) {
  let bytes = 0;
  const r = await executor.exec({ command, onData: (c) => (bytes += c.length) });
  if (r.exitCode !== 0) throw new Error(`${command}: exit ${r.exitCode} ${r.stopped ?? ""}`);
  return bytes;
}

let engine;
const results = { calls: CALLS, cpus: os.cpus().length, cpu: os.cpus()[0]?.model.trim(), node: process.version, executors: {} };
try {
  const kinds = ["host", ...(bwrapAvailable() ? ["bwrap"] : [])];
  if (!kinds.includes("bwrap")) console.error("bench: bubblewrap is not available here; bwrap is not measured");
  const started = args.includes("--no-docker") ? { skip: "--no-docker" } : await startTestDockerEngine();
  const settings = { host: { type: "host" }, bwrap: { type: "bwrap" } };
  if ("engine" in started) {
    engine = started.engine;
    settings.docker = { type: "docker", socketPath: engine.socketPath, image: await engine.importTestImage() };
    kinds.push("docker");
  } else console.error(`bench: docker is not measured: ${started.skip}`);
  const sandboxes = Object.fromEntries(kinds.map((k) => [k, new Sandbox(settings[k], { dataDir, workspaceDir }).forChannel(channelDir)]));
  const each = (fn) => Object.fromEntries(kinds.map((k) => [k, () => fn(sandboxes[k])]));
  const echo = await timeInTurns({ direct: () => spawnBash("echo hi"), ...each((s) => exec(s.executor, "echo hi")) });
  const cat = await timeInTurns(each((s) => exec(s.executor, "cat ten-mb.txt")));
  const read = await timeInTurns(each((s) => s.files.readFile("ten-mb.txt")));
  results.baseline = { echo: echo.direct };
  for (const k of kinds) results.executors[k] = { echo: echo[k], cat10mb: cat[k], read10mb: read[k] };

  if (kinds.includes("bwrap")) {
    const confined = sandboxes.bwrap;
    const view = channelView({ dataDir, workspaceDir, channelDir, shared: DEFAULT_SHARED });
    const cgroupBase = pidsCgroupBase();
    const unconfined = {
      executor: new BwrapExecutor({ view, env: {}, maxOutputBytes: 16 * MB, network: false, ...(cgroupBase && { pidsLimit: { cgroupBase, maxProcesses: DEFAULT_MAX_PROCESSES } }) }),
      files: new ConfinedFiles(view, 16 * MB),
    };
    writeFileSync(join(channelDir, "small.txt"), "x".repeat(1024));
    const pair = (fn) => ({ unconfined: () => fn(unconfined), confined: () => fn(confined) });
    const bash = await timeInTurns(pair((s) => exec(s.executor, "echo hi")));
    const readSmall = await timeInTurns(pair((s) => s.files.readFile("small.txt")));
    const readEtc = await timeInTurns(pair((s) => s.files.readFile("/etc/hostname")));
    let n = 0;
    const write = await timeInTurns(pair((s) => s.files.writeFile(`notes/w-${n++ % 8}.txt`, "hello\n")));
    results.confinement = { bash, readSmall, readEtc, write, limits: new Sandbox({ type: "bwrap" }, { dataDir, workspaceDir }).limitsReport() };
  }
} finally {
  await engine?.stop();
  rmSync(dataDir, { recursive: true, force: true });
}

if (JSON_OUT) {
  console.log(JSON.stringify(results, null, 2));
} else {
  const ms = (v) => `${v.toFixed(1)} ms`;
  const row = (name, s, base) => `| ${name} | ${ms(s.p50)} | ${ms(s.p90)} | ${base === undefined ? "" : `+${(s.p50 - base).toFixed(1)} ms`} |`;
  console.log(`Sandbox overhead per call (${CALLS} calls each, ${results.cpus} × ${results.cpu}, Node ${results.node})\n`);
  console.log("| call | p50 | p90 | p50 vs host |\n|---|---|---|---|");
  console.log(row("bash -c 'echo hi' spawned directly (no executor)", results.baseline.echo));
  const host = results.executors.host;
  for (const [type, r] of Object.entries(results.executors)) {
    console.log(row(`${type}: echo`, r.echo, type === "host" ? undefined : host.echo.p50));
    console.log(row(`${type}: cat of a 10 MB file (streamed out)`, r.cat10mb, type === "host" ? undefined : host.cat10mb.p50));
    console.log(row(`${type}: read tool, 10 MB file`, r.read10mb, type === "host" ? undefined : host.read10mb.p50));
  }
  const c = results.confinement;
  if (c) {
    console.log(`\nThe confinement of issue 30 (bwrap; same run, calls taking turns; p50, ratio confined / unconfined)\n`);
    console.log("| call | unconfined p50 | confined p50 | extra per call | ratio |\n|---|---|---|---|---|");
    const line = (name, v) => console.log(`| ${name} | ${ms(v.unconfined.p50)} | ${ms(v.confined.p50)} | ${v.confined.p50 - v.unconfined.p50 >= 0 ? "+" : ""}${(v.confined.p50 - v.unconfined.p50).toFixed(1)} ms | ${(v.confined.p50 / v.unconfined.p50).toFixed(2)} |`);
    line("bash: `echo hi`", c.bash);
    line("read tool: 1 KB file in the channel", c.readSmall);
    line("read tool: /etc/hostname", c.readEtc);
    line("write tool: new 6-byte file in the channel", c.write);
    console.log(`\nLimits in force here: ${c.limits.map((l) => `${l.on ? "" : "NOT IN FORCE: "}${l.name}: ${l.detail}`).join("; ")}`);
  }
}
