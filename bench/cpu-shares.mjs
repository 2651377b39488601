#!/usr/bin/env node
// Where a CPU profile's samples fall in mom: every sample goes to the nearest frame of its stack
// that is JavaScript outside Node's own modules (a JSON.parse or socket write called from nats.js
// counts for nats.js). With --spans (written by bus-overhead.mjs) only the measured rounds of one
// phase count (--phase load, the default, idle or quiet), per mode, in milliseconds: both modes in one
// process, so the machine's speed moves both columns alike.
//
//   node --cpu-prof --cpu-prof-dir=/tmp/prof bench/bus-overhead.mjs --spans /tmp/spans.json
//   node bench/cpu-shares.mjs /tmp/prof/*.cpuprofile --spans /tmp/spans.json [--phase idle|quiet]
import { readFileSync } from "node:fs";

const PARTS = [
  ["nats.js", /\/@nats-io\//],
  ["libs/bus", /\/libs\/bus\/dist\//],
  ["runner: ownership (cluster/)", /\/agent-runner\/dist\/cluster\//],
  ["runner: run publisher", /\/agent-runner\/dist\/run-publisher/],
  ["runner: model guard, usage, auth", /\/agent-runner\/dist\/model-guard|\/libs\/usage\/dist\/|\/libs\/auth\/dist\//],
  ["runner: the rest", /\/agent-runner\/dist\//],
  ["libs/contracts", /\/libs\/contracts\/dist\//],
  ["bench (load generator, in-process driver)", /\/bench\//],
  ["libs/agent", /\/libs\/agent\/dist\//],
  ["libs/store", /\/libs\/store\/dist\//],
  ["libs/sandbox", /\/libs\/sandbox\/dist\//],
  ["the fake model (libs/testing)", /\/libs\/testing\/dist\//],
  ["other libs", /\/libs\/[^/]+\/dist\//],
  ["pi", /\/@mariozechner\//],
  ["openai, undici (model client)", /\/node_modules\/(openai|undici)\//],
  ["other packages", /\/node_modules\//],
];
const OTHER = "everything else";
const UNATTRIBUTED = new Set(["(garbage collector)", "(program)", "(idle)"]);

const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(name);
  return at >= 0 ? args.splice(at, 2)[1] : undefined;
};
const spansFile = option("--spans");
const phase = option("--phase") ?? "load";
const file = args[0];
if (!file || file === "-h" || file === "--help" || !["load", "idle", "quiet"].includes(phase)) {
  console.log("usage: node bench/cpu-shares.mjs PROFILE.cpuprofile [--spans SPANS.json [--phase load|idle|quiet]]");
  process.exit(file === "-h" || file === "--help" ? 0 : 2);
}
const profile = JSON.parse(readFileSync(file, "utf8"));
const spans = spansFile ? JSON.parse(readFileSync(spansFile, "utf8")).filter((s) => s.phase === phase) : undefined;
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

function partOf(id) {
  for (let x = id; x !== undefined; x = parent.get(x)) {
    const { url, functionName } = nodes.get(x).callFrame;
    if (UNATTRIBUTED.has(functionName)) return functionName;
    if (!url || url.startsWith("node:")) continue;
    return PARTS.find(([, re]) => re.test(url))?.[0] ?? OTHER;
  }
  return OTHER;
}

const columns = spans ? [...new Set(spans.map((s) => s.mode))] : ["all"];
const micros = new Map(); // part -> [µs per column]
const busy = columns.map(() => 0);
let t = profile.startTime;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  t += dt;
  const col = spans ? columns.indexOf(spans.find((s) => t >= s.fromUs && t <= s.toUs)?.mode) : 0;
  if (col < 0) return;
  const part = partOf(id);
  if (part === "(idle)") return;
  if (!micros.has(part)) micros.set(part, columns.map(() => 0));
  micros.get(part)[col] += dt;
  busy[col] += dt;
});

const ms = (us) => (us / 1000).toFixed(0).padStart(8);
const pct = (us, col) => `${((100 * us) / (busy[col] || 1)).toFixed(1).padStart(5)}%`;
console.log(`${"".padEnd(44)}${columns.map((c) => `${c.padStart(8)} ms  share`).join("   ")}`);
for (const [part, cols] of [...micros].sort((a, b) => b[1][0] - a[1][0])) {
  console.log(`${part.padEnd(44)}${cols.map((us, c) => `${ms(us)}  ${pct(us, c)}`).join("   ")}`);
}
console.log(`${"CPU samples (idle excluded)".padEnd(44)}${busy.map((us) => `${ms(us)}  100.0%`).join("   ")}`);
if (spans && columns.length === 2) console.log(`${columns[0]} / ${columns[1]}: ×${(busy[0] / busy[1]).toFixed(3)}`);
