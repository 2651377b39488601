#!/usr/bin/env node
// The same runner on two Node binaries, side by side in one run: `bus-overhead.mjs --phase bus`
// (the runner started in-process as `mom runner` starts it, the load generator and the fake model in
// the same process) run alternately under each, in ABBA order, and the ratios new ÷ old of each
// back-to-back pair.
//
//   npm run bench -- node-versions                       # the machine's old Node vs Node 24 (fetched if need be)
//   node bench/node-versions.mjs [--old BIN] [--new BIN] [--pairs N] [--json] [-- bus-overhead options]
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureNode24, supported } from "../scripts/ensure-node.mjs";
import { ensureNatsServer } from "../scripts/ensure-tools.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const dash = argv.indexOf("--");
const own = dash === -1 ? argv : argv.slice(0, dash);
// Shorter than the default bus-overhead run (about 40 s each): no in-process side, no quiet slots.
const passOn = dash === -1 ? ["--idle", "150", "--quiet", "0", "--rounds", "4"] : argv.slice(dash + 1);
const opt = (name) => {
  const i = own.indexOf(name);
  return i === -1 ? undefined : own[i + 1];
};
if (own.includes("--help")) {
  console.log("usage: node bench/node-versions.mjs [--old BIN] [--new BIN] [--pairs N] [--json] [-- bus-overhead options (default: --idle 150 --quiet 0 --rounds 4)]");
  process.exit(0);
}
const json = own.includes("--json");
const pairs = Number(opt("--pairs") ?? 2);
const say = json ? () => {} : (...a) => console.error(...a);

const version = (bin) => spawnSync(bin, ["--version"], { encoding: "utf8" }).stdout?.trim();
const oldBin = opt("--old") ?? (["/usr/bin/node", "/usr/local/bin/node", process.execPath].find((b) => version(b) && !supported(version(b))));
const newBin = opt("--new") ?? (supported() ? process.execPath : join(ensureNode24(), "node"));
if (!oldBin) {
  console.error("node-versions: no Node older than 24 found here; name one with --old BIN");
  process.exit(1);
}
if (!(await ensureNatsServer())) process.exit(1);
const bins = { old: { bin: oldBin, version: version(oldBin) }, new: { bin: newBin, version: version(newBin) } };
say(`node-versions: ${bins.old.version} (${oldBin}) against ${bins.new.version} (${newBin}), ${pairs} pair(s) in ABBA order, bus-overhead ${["--phase", "bus", ...passOn].join(" ")}`);

function once(which) {
  const started = Date.now();
  const r = spawnSync(bins[which].bin, ["--expose-gc", join(here, "bus-overhead.mjs"), "--json", "--phase", "bus", ...passOn], { encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`bus-overhead on ${bins[which].version} exited ${r.status ?? r.signal}:\n${r.stderr.slice(-2000)}`);
  const s = JSON.parse(r.stdout);
  const fig = {
    cpuMsPerMsg: s.bus.load.nodeCpuMsPerMsg,
    loadP50Ms: s.bus.load.runEnded.p50,
    msgsPerSec: s.bus.load.msgsPerSec,
    idleP50Ms: s.bus.idle?.runEnded.p50,
    natsCpuMsPerMsg: s.bus.load.natsCpuMsPerMsg,
    rssMb: s.process.rssMb,
  };
  say(`  ${bins[which].version}: CPU ${fig.cpuMsPerMsg.toFixed(2)} ms/msg, load p50 ${fig.loadP50Ms.toFixed(1)} ms, ${fig.msgsPerSec.toFixed(0)} msg/s, idle p50 ${fig.idleP50Ms?.toFixed(2) ?? "-"} ms, RSS ${fig.rssMb} MB (${Math.round((Date.now() - started) / 1000)} s)`);
  return { ...fig, machine: s.machine };
}

const runs = [];
for (let i = 0; i < pairs; i++) {
  const order = i % 2 === 0 ? ["old", "new"] : ["new", "old"];
  const got = {};
  for (const which of order) got[which] = once(which);
  runs.push(got);
}
const keys = ["cpuMsPerMsg", "loadP50Ms", "msgsPerSec", "idleP50Ms", "natsCpuMsPerMsg", "rssMb"];
const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : undefined;
};
const ratios = Object.fromEntries(keys.map((k) => [k, runs.map((r) => r.new[k] / r.old[k])]));
const summary = {
  old: bins.old,
  new: bins.new,
  busOverheadArgs: ["--phase", "bus", ...passOn],
  machine: runs[0]?.old.machine,
  runs: runs.map((r) => ({ old: { ...r.old, machine: undefined }, new: { ...r.new, machine: undefined } })),
  ratioNewToOld: Object.fromEntries(keys.map((k) => [k, { perPair: ratios[k], median: median(ratios[k]) }])),
};
if (json) {
  console.log(JSON.stringify(summary, null, 2));
} else {
  const f = (x, d = 2) => (x === undefined || !Number.isFinite(x) ? "-" : x.toFixed(d));
  console.log(`\n${summary.machine.cpus} × ${summary.machine.cpuModel}, nats-server ${summary.machine.natsServer}`);
  console.log(`| | ${bins.old.version} | ${bins.new.version} | ${bins.new.version} ÷ ${bins.old.version}, median of the pairs (each pair) |`);
  console.log("|---|---|---|---|");
  const rows = { cpuMsPerMsg: "load: node CPU per message (ms)", loadP50Ms: "load: p50 to run end (ms)", msgsPerSec: "load: throughput (msg/s)", idleP50Ms: "idle: p50 to run end (ms)", natsCpuMsPerMsg: "nats-server CPU per message (ms)", rssMb: "process RSS at the end (MB)" };
  for (const [k, label] of Object.entries(rows)) {
    const range = (w) => {
      const xs = runs.map((r) => r[w][k]).filter(Number.isFinite);
      return xs.length ? `${f(Math.min(...xs))}–${f(Math.max(...xs))}` : "-";
    };
    console.log(`| ${label} | ${range("old")} | ${range("new")} | ×${f(summary.ratioNewToOld[k].median, 3)} (${ratios[k].map((x) => `×${f(x, 3)}`).join(", ")}) |`);
  }
}
