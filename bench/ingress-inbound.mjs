#!/usr/bin/env node
// What the ingress SDK's shell costs per inbound message, against the kit's parts strung together
// by hand (what each ingress did before the shell: InboundIntake.take + publishInbound).
//   node bench/ingress-inbound.mjs [--messages N] [--rounds R] [--json]     (after `npm run build`)
// One nats-server of the bench's own; both paths publish the same messages to the same stream and
// take turns batch by batch (the machine's load changes from second to second), so each meets the
// same conditions. Measured: the process's CPU time per message (user + system) and the wall time
// of a batch of N messages over 20 channels, from the first receive to the last JetStream ack.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const sdk = await import(join(root, "libs/ingress-sdk/dist/index.js"));
const { startTestNats } = await import(join(root, "libs/testing/dist/index.js"));
const { pino } = await import("pino");

const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : dflt);
// Batches of 2,000 × 6 rounds (70 ms each) gave ratios from ×0.81 to ×1.40 run to run: GC and JIT
// land on whichever path runs then. 5,000 × 15, with a collection before each batch, hold within a few %.
const N = opt("--messages", 5000);
const ROUNDS = opt("--rounds", 15);
const JSON_OUT = args.includes("--json");
const CHANNELS = 20;

const nats = await startTestNats();
const log = pino({ level: "silent" });
const dataDir = mkdtempSync(join(os.tmpdir(), "mom-bench-ingress-"));
writeFileSync(join(dataDir, "config.json"), JSON.stringify({ nats: { url: nats.url, namespace: nats.namespace }, adapters: { shell: { type: "external", platform: "bench" }, kit: { type: "external", platform: "bench" } } }));

// A platform that draws nothing: the bench is about the inbound side.
const silent = { dialect: undefined, post: async () => "1", upload: async () => {}, prompt: async () => "1", closePrompt: async () => {} };
const definition = { platform: "bench", settings: sdk.Type.Object({}), connect: () => ({ surface: { ...silent, dialect: sdk.plainDialect(4000) }, start: async () => {}, stop: async () => {} }) };
const loaded = (await import(join(root, "libs/config/dist/index.js"))).loadConfig(dataDir, {});
const shell = await sdk.startConfiguredIngress(definition, loaded, "shell", log, nats.url);
const { busOptions } = await import(join(root, "libs/bus/dist/index.js"));
const bus = await sdk.Bus.connect(busOptions(loaded, nats.url, "bench-kit", log));
const intake = new sdk.InboundIntake("bench", log);

let n = 0;
const message = () => {
  const i = n++;
  return { id: `m${i}`, channelId: `C${i % CHANNELS}`, timestamp: new Date().toISOString(), sender: { id: "U1", username: "ana", isBot: false }, text: `message ${i}`, isMention: i % 10 === 0 };
};

const paths = {
  // Before the shell: each ingress took its message through the intake and published it itself.
  kit: () =>
    Promise.all(
      Array.from({ length: N }, () => {
        const m = message();
        return new Promise((resolve, reject) => intake.take(m.channelId, m.id, () => sdk.publishInbound(bus, "kit", { ...m, attachments: [] }, { log }).then(resolve, reject)));
      }),
    ),
  shell: () => Promise.all(Array.from({ length: N }, () => shell.shell.receive(message()))),
};

async function measure(fn) {
  globalThis.gc?.();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { cpuUsPerMsg: (c.user + c.system) / N, wallMs: wall };
}

for (const fn of Object.values(paths)) await fn(); // warm-up
const samples = { kit: [], shell: [] };
// Which path goes first alternates: the one that follows meets the server still busy with the other's batch.
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 ? ["shell", "kit"] : ["kit", "shell"];
  for (const k of order) samples[k].push(await measure(paths[k]));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, { cpuUsPerMsg: median(v.map((s) => s.cpuUsPerMsg)), wallMs: median(v.map((s) => s.wallMs)) }]));
results.ratio = { cpu: results.shell.cpuUsPerMsg / results.kit.cpuUsPerMsg, wall: results.shell.wallMs / results.kit.wallMs };

await shell.close();
await bus.drain();
await nats.stop();
rmSync(dataDir, { recursive: true, force: true });

if (JSON_OUT) console.log(JSON.stringify({ messages: N, rounds: ROUNDS, ...results }, null, 2));
else {
  console.log(`Inbound cost per message, ${N} messages × ${ROUNDS} rounds each way over ${CHANNELS} channels (${os.cpus().length} × ${os.cpus()[0]?.model}, Node ${process.version})\n`);
  console.log("| path | CPU per message | batch wall time |\n|---|---|---|");
  console.log(`| kit by hand (intake + publishInbound) | ${results.kit.cpuUsPerMsg.toFixed(0)} µs | ${results.kit.wallMs.toFixed(0)} ms |`);
  console.log(`| SDK shell (inbound.receive) | ${results.shell.cpuUsPerMsg.toFixed(0)} µs | ${results.shell.wallMs.toFixed(0)} ms |`);
  console.log(`\nshell / kit: CPU ×${results.ratio.cpu.toFixed(2)}, wall ×${results.ratio.wall.toFixed(2)} (goal ≤ ×1.05)`);
}
