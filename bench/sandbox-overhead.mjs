#!/usr/bin/env node
// What a sandbox costs per tool call: the same calls through each executor mom has here.
//   node bench/sandbox-overhead.mjs [--calls N] [--json]     (after `npm run build`)
// Calls, each timed from the tool's point of view (executor.exec / ConfinedFiles.readFile):
//   echo       `echo hi` through executor.exec
//   cat 10 MB  `cat` of a 10 MB file through executor.exec (10 MB streamed out of the sandbox)
//   read 10 MB the read tool's file access (ConfinedFiles.readFile) of the same file
// plus a baseline: `bash -c 'echo hi'` spawned directly with child_process (no executor).
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { Sandbox, bwrapAvailable } = await import(join(root, "libs/sandbox/dist/index.js"));

const args = process.argv.slice(2);
if (args.includes("--help")) {
  console.log("usage: node bench/sandbox-overhead.mjs [--calls N (default 50)] [--json]");
  process.exit(0);
}
const callsAt = args.indexOf("--calls");
const CALLS = callsAt >= 0 ? Number(args[callsAt + 1]) : 50;
const JSON_OUT = args.includes("--json");
const MB = 1024 * 1024;

const dataDir = mkdtempSync(join(os.tmpdir(), "mom-bench-sandbox-"));
const workspaceDir = join(dataDir, "workspace");
const channelDir = join(workspaceDir, "channels", "bench", "c1");
mkdirSync(channelDir, { recursive: true });
writeFileSync(join(channelDir, "ten-mb.txt"), `${"x".repeat(99)}\n`.repeat((10 * MB) / 100));

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { p50: at(0.5), p90: at(0.9), mean: s.reduce((a, b) => a + b, 0) / s.length };
}

async function time(fn) {
  await fn(); // warm-up
  const samples = [];
  for (let i = 0; i < CALLS; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  return stats(samples);
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

const results = { calls: CALLS, cpus: os.cpus().length, cpu: os.cpus()[0]?.model.trim(), node: process.version, executors: {} };
try {
  results.baseline = { echo: await time(() => spawnBash("echo hi")) };
  const kinds = ["host", ...(bwrapAvailable() ? ["bwrap"] : [])];
  if (!kinds.includes("bwrap")) console.error("bench: bubblewrap is not available here; only the host executor is measured");
  for (const type of kinds) {
    const { executor, files } = new Sandbox({ type }, { dataDir, workspaceDir }).forChannel(channelDir);
    results.executors[type] = {
      echo: await time(() => exec(executor, "echo hi")),
      cat10mb: await time(() => exec(executor, "cat ten-mb.txt")),
      read10mb: await time(() => files.readFile("ten-mb.txt")),
    };
  }
} finally {
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
}
