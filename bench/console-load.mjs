#!/usr/bin/env node
// The web console under load: 500 channels and 5 runs/s of synthetic run events on real NATS, the
// console as deployed (`mom console`, its own process), and a real browser (Debian's Chromium via
// playwright-core) on the live overview. Measures
//   - latency: from publishing a run_started on the bus to the overview in the browser showing it
//     (a probe run on a channel of its own every second, seen by a MutationObserver in the page);
//   - the console process's CPU (share of one core) and resident memory.
//
//   npm run bench -- console [--channels 500] [--runs-per-second 5] [--seconds 60]
//   node bench/console-load.mjs --help
//
// Needs `npm run build`, nats-server and /usr/bin/chromium.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { procCpuSeconds, procRssBytes } from "./runner-process.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(join(root, p));
const { spawnNatsServer, freePort } = await dist("libs/testing/dist/index.js");
const { Bus } = await dist("libs/bus/dist/index.js");
const { chromium } = await import("playwright-core");

const o = { channels: 500, rate: 5, seconds: 60, json: false };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === "--channels") o.channels = Number(argv[++i]);
  else if (a === "--runs-per-second") o.rate = Number(argv[++i]);
  else if (a === "--seconds") o.seconds = Number(argv[++i]);
  else if (a === "--json") o.json = true;
  else {
    console.log("usage: console-load.mjs [--channels 500] [--runs-per-second 5] [--seconds 60] [--json]");
    process.exit(a === "--help" ? 0 : 2);
  }
}
const CHROMIUM = "/usr/bin/chromium";
if (!existsSync(CHROMIUM)) {
  console.log(`console bench NOT RUN: ${CHROMIUM} is missing`);
  process.exit(0);
}

const TOKEN = "bench-token-0123456789abcdef";
const nats = await spawnNatsServer();
const dataDir = mkdtempSync(join(tmpdir(), "mom-console-bench-"));
writeFileSync(join(dataDir, "config.json"), JSON.stringify({ nats: { url: nats.url, namespace: nats.namespace }, log: { level: "warn" }, console: { users: { bench: { role: "viewer", token: TOKEN } } } }));
const bus = await Bus.connect({ url: nats.url, namespace: nats.namespace, name: "console-bench" });
await bus.provision();

const seqs = new Map();
const publish = (channel, runId, event) => {
  const seq = seqs.get(runId) ?? 0;
  seqs.set(runId, seq + 1);
  return bus.publish(bus.subjects.channel("out", { adapter: "bench", channelId: channel }), { runId, seq, ts: new Date().toISOString(), event }, `${runId}:${seq}`);
};
const usage = { input: 1200, output: 40, cacheRead: 0, cacheWrite: 0, totalTokens: 1240, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
let runN = 0;
/** One synthetic run: start, a tool call, its end, the run's end (4 events, as a short real run). */
async function run(channel, user = "ann") {
  const runId = `run-${++runN}`;
  const trigger = { messageId: `m-${runN}`, senderId: "u1", username: user, text: "hi" };
  await publish(channel, runId, { type: "run_started", trigger, model: "fake/fake-model" });
  await publish(channel, runId, { type: "tool_execution_start", toolCallId: "t1", toolName: "bash", label: "Look", args: { command: "ls" } });
  await publish(channel, runId, { type: "tool_execution_end", toolCallId: "t1", toolName: "bash", label: "Look", isError: false, resultText: "ok", durationMs: 3 });
  await publish(channel, runId, { type: "run_ended", stopReason: "stop", finalText: "done", usage, durationMs: 20, toolActivity: [] });
}

// Every channel has had a run today before the console starts: its overview lists them all.
const channels = Array.from({ length: o.channels }, (_, i) => `c${i}`);
for (let i = 0; i < channels.length; i += 50) await Promise.all(channels.slice(i, i + 50).map((c) => run(c)));

const port = await freePort();
const env = { ...process.env, MOM_CONSOLE_PORT: String(port) };
delete env.NATS_URL;
const child = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "console", dataDir], { env, stdio: ["ignore", "ignore", "pipe"] });
let stderr = "";
child.stderr.setEncoding("utf8").on("data", (d) => (stderr = (stderr + d).slice(-8000)));
const url = `http://127.0.0.1:${port}`;
for (let i = 0; !(await fetch(`${url}/healthz`).then((r) => r.ok, () => false)); i++) {
  if (i > 300 || child.exitCode !== null) throw new Error(`console did not start:\n${stderr}`);
  await new Promise((r) => setTimeout(r, 100));
}

const profile = mkdtempSync(join(tmpdir(), "mom-console-bench-chromium-"));
const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"] });
const page = await context.newPage();
await page.goto(`${url}/login`);
await page.getByLabel("Login token").fill(TOKEN);
await page.getByRole("button", { name: "Sign in" }).click();
await page.waitForURL(`${url}/`);
await page.waitForFunction((n) => document.querySelectorAll("[data-channel]").length >= n, o.channels, { timeout: 60_000 });
// The page notes when each probe channel first shows (wall clock, same machine as the publisher).
await page.evaluate(() => {
  window.__seen = {};
  new MutationObserver(() => {
    for (const el of document.querySelectorAll('[data-channel^="bench/probe-"]')) {
      const id = el.getAttribute("data-channel");
      if (!(id in window.__seen)) window.__seen[id] = Date.now();
    }
  }).observe(document.body, { childList: true, subtree: true });
});

// Steady load: `rate` runs/s on the channels round-robin, one probe per second on a new channel.
const cpu0 = procCpuSeconds(child.pid);
const t0 = Date.now();
const sent = {};
const rss = [];
let next = 0;
const load = setInterval(() => void run(channels[next++ % channels.length]).catch(() => {}), 1000 / o.rate);
for (let s = 0; s < o.seconds; s++) {
  const id = `probe-${s}`;
  sent[`bench/${id}`] = Date.now();
  void run(id, "probe");
  await new Promise((r) => setTimeout(r, 1000));
  rss.push(procRssBytes(child.pid));
}
clearInterval(load);
const wall = (Date.now() - t0) / 1000;
const cpu = (procCpuSeconds(child.pid) - cpu0) / wall;
await new Promise((r) => setTimeout(r, 2000));
const seen = await page.evaluate(() => window.__seen);
const lat = Object.entries(sent).map(([id, t]) => (seen[id] === undefined ? Infinity : seen[id] - t)).sort((a, b) => a - b);
const pct = (p) => lat[Math.min(lat.length - 1, Math.ceil((p / 100) * lat.length) - 1)];
const result = {
  channels: o.channels,
  runsPerSecond: o.rate,
  eventsPerSecond: o.rate * 4 + 4,
  seconds: o.seconds,
  latencyMs: { p50: pct(50), p95: pct(95), max: lat.at(-1), missed: lat.filter((x) => x === Infinity).length },
  consoleCpuShareOfOneCore: Number(cpu.toFixed(3)),
  consoleRssMiB: { median: Math.round(rss.sort((a, b) => a - b)[rss.length >> 1] / 2 ** 20), max: Math.round(Math.max(...rss) / 2 ** 20) },
};

await context.close();
rmSync(profile, { recursive: true, force: true });
child.kill("SIGTERM");
await new Promise((r) => child.once("exit", r));
await bus.drain();
await nats.stop();
rmSync(dataDir, { recursive: true, force: true });

if (o.json) console.log(JSON.stringify(result));
else {
  console.log(`console under load: ${result.channels} channels, ${result.runsPerSecond} runs/s (${result.eventsPerSecond} outbound events/s) for ${result.seconds} s, one browser on the live overview`);
  console.log(`  bus -> browser: p50 ${result.latencyMs.p50} ms, p95 ${result.latencyMs.p95} ms, max ${result.latencyMs.max} ms${result.latencyMs.missed ? `, ${result.latencyMs.missed} never shown` : ""} (goal p95 <= 500 ms)`);
  console.log(`  console process: CPU ${(result.consoleCpuShareOfOneCore * 100).toFixed(1)}% of one core, RSS median ${result.consoleRssMiB.median} MiB, max ${result.consoleRssMiB.max} MiB`);
}
