#!/usr/bin/env node
// Code mode against one call per turn: the same task needing N tool calls, done by a scripted model
// both ways through a real runner on real NATS, and what one nested call and one script start cost.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(join(root, p));
const { spawnNatsServer, startFakeLlm } = await dist("libs/testing/dist/index.js");
const { loadConfig, createLogger } = await dist("libs/config/dist/index.js");
const { Bus, busOptions } = await dist("libs/bus/dist/index.js");
const { connectionOf } = await dist("libs/bus/dist/bus.js");
const { startRunner } = await dist("services/agent-runner/dist/index.js");
const { createRunCodeTool, ScriptPool } = await dist("libs/code-mode/dist/index.js");
const { default: Type } = await import("typebox");

const { values: o } = parseArgs({
  options: {
    json: { type: "boolean", default: false },
    n: { type: "string", default: "5,20,50" },
    rounds: { type: "string", default: "200" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (o.help) {
  console.log("usage: node bench/code-mode.mjs [--json] [--n 5,20,50] [--rounds 200]");
  process.exit(0);
}
const SIZES = o.n.split(",").map(Number);
const ROUNDS = Number(o.rounds);
const log = (...a) => o.json || console.error(...a);
const p50 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
// What the model is sent, in tokens: the usual estimate of 4 characters per token, over the whole
// request body's messages and tool definitions (both strategies are counted alike).
const tokensOf = (req) => Math.ceil((JSON.stringify(req.body.messages).length + JSON.stringify(req.body.tools ?? []).length) / 4);

const TOOL = `
import Type from "typebox";
export default {
  id: "bench.item.check",
  description: "Checks one item of the inventory and says whether it needs attention",
  risk: "read",
  parameters: Type.Object({ item: Type.Integer({ minimum: 1, description: "the item's number" }) }),
  async execute(args) {
    return "item " + args.item + ": " + (args.item % 7 === 0 ? "needs attention (stock below minimum)" : "in order, stock 42, last checked this morning");
  },
};
`;

async function endToEnd() {
  const nats = await spawnNatsServer();
  const llm = await startFakeLlm();
  const dataDir = mkdtempSync(join(os.tmpdir(), "mom-bench-code-mode-"));
  const toolsDir = join(dataDir, "global-tools");
  mkdirSync(join(toolsDir, "check"), { recursive: true });
  writeFileSync(join(toolsDir, "check", "index.ts"), TOOL);
  writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
  writeFileSync(
    join(dataDir, "config.json"),
    JSON.stringify({ model: "fake/fake-model", nats: { url: nats.url, namespace: nats.namespace }, tools: { globalDir: toolsDir }, log: { level: "warn" } }),
  );
  const loaded = loadConfig(dataDir);
  // Errors only: shutting the runner down at the end logs each channel it lets go.
  const logger = createLogger("bench", { level: "error" });
  const runner = await startRunner({ loaded, bus: busOptions(loaded, nats.url, "agent-runner", logger), logger });
  const bus = await Bus.connect(busOptions(loaded, nats.url, "bench-code-mode", logger));
  const ended = new Map();
  const sub = connectionOf(bus).nc.subscribe(bus.subjects.wildcard("out"));
  void (async () => {
    for await (const m of sub) {
      const e = m.json();
      if (e.event.type === "run_ended") ended.get(bus.subjects.parse(m.subject).channelId)?.(e.event);
    }
  })();
  let seq = 0;
  const ask = async (channel, turns) => {
    llm.reset();
    llm.enqueue(...turns);
    const id = `${channel}-${++seq}`;
    const done = new Promise((r) => ended.set(channel, r));
    const t0 = performance.now();
    await bus.publish(bus.subjects.channel("in", { adapter: "cli", channelId: channel }), { id, channelId: channel, timestamp: new Date().toISOString(), sender: { id: "U1", username: "user1", isBot: false }, text: "check the inventory", attachments: [], isMention: true }, id);
    const event = await done;
    const ms = performance.now() - t0;
    if (event.stopReason === "error" || llm.pending() > 0) throw new Error(`run did not go as scripted: ${JSON.stringify(event).slice(0, 300)}`);
    return { ms, requests: llm.requests.length, tokens: llm.requests.reduce((s, r) => s + tokensOf(r), 0), activity: event.toolActivity ?? [] };
  };
  const perTurn = (n) => [
    ...Array.from({ length: n }, (_, i) => ({ toolCalls: [{ name: "invoke_tool", arguments: { label: `Check item ${i + 1}`, tool: "bench.item.check", args: { item: i + 1 } } }] })),
    { text: "Checked every item; a few need attention." },
  ];
  const script = (n) =>
    `const attention: string[] = [];\nfor (let i = 1; i <= ${n}; i++) {\n  const r = await tools.bench.item.check({ item: i });\n  if (r.ok && r.text.includes("attention")) attention.push(r.text);\n}\nreturn { checked: ${n}, attention };`;
  const codeMode = (n) => [{ toolCalls: [{ name: "run_code", arguments: { label: `Check ${n} items`, code: script(n) } }] }, { text: "Checked every item; a few need attention." }];
  const rows = [];
  try {
    await ask("warm", codeMode(2));
    await ask("warm", perTurn(2));
    for (const n of SIZES) {
      const a = await ask(`turns-${n}`, perTurn(n));
      const b = await ask(`code-${n}`, codeMode(n));
      rows.push({ n, perTurn: a, codeMode: b });
      log(`  N=${n}: one call per turn ${a.requests} requests, ~${a.tokens} input tokens, ${a.ms.toFixed(0)} ms; run_code ${b.requests} requests, ~${b.tokens} input tokens, ${b.ms.toFixed(0)} ms`);
    }
  } finally {
    sub.unsubscribe();
    await bus.drain();
    await runner.close();
    await llm.close();
    await nats.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows.map(({ n, perTurn: a, codeMode: b }) => ({
    n,
    perTurn: { requests: a.requests, inputTokens: a.tokens, ms: Math.round(a.ms) },
    codeMode: { requests: b.requests, inputTokens: b.tokens, ms: Math.round(b.ms) },
    requestsRatio: +(b.requests / a.requests).toFixed(3),
    tokensRatio: +(b.tokens / a.tokens).toFixed(3),
    wallRatio: +(b.ms / a.ms).toFixed(3),
  }));
}

/** The code-mode path alone: a gate that only runs the call, so what is left is the script's hop. */
async function overheads() {
  const tool = { id: "bench.noop.run", description: "does nothing", risk: "read", parameters: Type.Object({ i: Type.Integer() }), execute: async () => "ok" };
  const source = { tools: () => [tool], get: (id) => (id === tool.id ? tool : undefined) };
  const gate = { run: (_call, signal, fn) => fn(signal ?? new AbortController().signal) };
  const pool = new ScriptPool();
  const run = createRunCodeTool(source, gate, pool, { channel: "cli/bench", cwd: os.tmpdir() });
  const exec = async (code) => {
    const t0 = performance.now();
    await run.execute("c", { code }, undefined, undefined, undefined);
    return performance.now() - t0;
  };
  const CALLS = 1000;
  try {
    for (let i = 0; i < 20; i++) await exec("return 1");
    const starts = [];
    for (let i = 0; i < ROUNDS; i++) starts.push(await exec("return 1"));
    // The same direct calls from Node, for the baseline of what the tool and the gate cost anyway.
    const direct = [];
    const loops = [];
    for (let r = 0; r < 5; r++) {
      const t0 = performance.now();
      for (let i = 0; i < CALLS; i++) await gate.run({}, undefined, () => tool.execute({ i }));
      direct.push((performance.now() - t0) / CALLS);
      loops.push((await exec(`for (let i = 0; i < ${CALLS}; i++) await tools.bench.noop.run({ i });`)) / CALLS);
    }
    return { scriptStartP50Ms: +p50(starts).toFixed(2), nestedCallMs: +(p50(loops) - p50(direct)).toFixed(3), directCallMs: +p50(direct).toFixed(4) };
  } finally {
    pool.close();
  }
}

log("code-mode bench: a task needing N tool calls, one call per turn vs one run_code (scripted model, real runner and NATS)");
const results = { sizes: await endToEnd(), ...(await overheads()) };
log(`  script start (warm worker, "return 1" through run_code) p50 ${results.scriptStartP50Ms} ms (goal <= 50 ms)`);
log(`  one nested call's overhead (worker hop, JSON, validation) ${results.nestedCallMs} ms (goal <= 2 ms)`);
for (const r of results.sizes) log(`  N=${r.n}: run_code needs x${r.requestsRatio} the requests, x${r.tokensRatio} the input tokens, x${r.wallRatio} the wall time`);
if (o.json) console.log(JSON.stringify(results, null, 2));
