// Runs one model-written script in QuickJS (WebAssembly) inside this worker thread. The script
// has no Node, no network, no filesystem, no timers and no processes: its only way out is
// `tools.<id>(input)`, which posts the call to the runner's thread (the gate) and awaits the
// answer. CPU time spent inside the interpreter is bounded by the interrupt handler (waiting for
// a tool or an approval does not count); memory by QuickJS's own limit. The runner ends the
// worker with terminate() for `stop`. Plain JavaScript beside the package so the built runner and
// the tests share one file.
import { parentPort, workerData } from "node:worker_threads";
import { performance } from "node:perf_hooks";
import { newQuickJSWASMModule } from "quickjs-emscripten";
import { transform } from "sucrase";

const quickjs = await newQuickJSWASMModule();

// Everything the script sees besides its own code. `__call` and `__print` are host functions;
// they are deleted from the global scope once captured, so the script cannot reach them.
const PRELUDE = `
(() => {
  const call = globalThis.__call, print = globalThis.__print, ids = JSON.parse(globalThis.__ids), catalogue = JSON.parse(globalThis.__catalogue);
  delete globalThis.__call; delete globalThis.__print; delete globalThis.__ids; delete globalThis.__catalogue;
  const show = (v) => typeof v === "string" ? v : (() => { try { return JSON.stringify(v, null, 2) ?? String(v); } catch { return String(v); } })();
  const line = (...a) => print(a.map(show).join(" "));
  globalThis.console = { log: line, info: line, warn: line, error: line, debug: line };
  const invoke = (id, input) => {
    let json;
    try { json = JSON.stringify(input === undefined ? {} : input); } catch (e) { return Promise.resolve({ ok: false, error: "input is not JSON: " + e.message }); }
    return call(id, json).then((r) => JSON.parse(r));
  };
  const tools = {};
  for (const id of ids) {
    let at = tools;
    const parts = id.split(".");
    for (const p of parts.slice(0, -1)) at = at[p] ??= {};
    at[parts.at(-1)] = (input) => invoke(id, input);
  }
  tools.call = invoke;
  tools.search = (query) => {
    const words = String(query ?? "").toLowerCase().split(/\\s+/).filter(Boolean);
    return catalogue.filter((t) => words.every((w) => (t.id + " " + t.description).toLowerCase().includes(w))).map((t) => ({ id: t.id, risk: t.risk, description: t.description }));
  };
  tools.describe = (id) => catalogue.find((t) => t.id === id)?.declaration ?? null;
  globalThis.tools = Object.freeze(tools);
})();
`;

// The script's lines stay its lines: the wrapper shares line 1 and sucrase keeps line numbers.
const WRAP_OPEN = "async function script() {";

function compile(code) {
  try {
    return { js: transform(`${WRAP_OPEN}${code}\n}`, { transforms: ["typescript"], disableESTransforms: true }).code };
  } catch (err) {
    const line = err.loc?.line;
    const message = String(err.message).replace(/\s*\(\d+:\d+\)$/, "");
    return { error: { kind: "syntax", message: line ? `line ${line}: ${message}` : message, line } };
  }
}

// One script at a time, each in a runtime of its own; the worker (and QuickJS's compiled code) is
// reused for the next script unless the runner ended it. Tool answers go to the running script.
let answer = () => {};
parentPort.on("message", (m) => {
  if (m.type === "run") run(m).catch((err) => parentPort.postMessage({ type: "done", error: { kind: "internal", message: String(err?.stack ?? err) } }));
  else if (m.type === "answer") answer(m);
});
parentPort.postMessage({ type: "ready" });

async function run({ code, ids, catalogue, limits }) {
  const compiled = compile(code);
  if (compiled.error) return parentPort.postMessage({ type: "done", error: compiled.error });

  const runtime = quickjs.newRuntime();
  runtime.setMemoryLimit(limits.memoryBytes);
  runtime.setMaxStackSize(512 * 1024);
  let cpuUsed = 0;
  let sliceStart = 0;
  let outOfTime = false;
  runtime.setInterruptHandler(() => {
    if (cpuUsed + (performance.now() - sliceStart) > limits.cpuMs) outOfTime = true;
    return outOfTime;
  });
  const vm = runtime.newContext();

  let output = "";
  let dropped = 0;
  const print = vm.newFunction("__print", (h) => {
    const text = `${vm.getString(h)}\n`;
    const room = limits.outputChars - output.length;
    if (room >= text.length) output += text;
    else {
      if (room > 0) output += text.slice(0, room);
      dropped += text.length - Math.max(room, 0);
    }
  });
  vm.setProp(vm.global, "__print", print);
  print.dispose();

  const waiting = new Map();
  let seq = 0;
  const call = vm.newFunction("__call", (idH, inputH) => {
    const id = ++seq;
    const deferred = vm.newPromise();
    waiting.set(id, deferred);
    parentPort.postMessage({ type: "call", id, toolId: vm.getString(idH), input: vm.getString(inputH) });
    return deferred.handle;
  });
  vm.setProp(vm.global, "__call", call);
  call.dispose();
  for (const [name, value] of [["__ids", JSON.stringify(ids)], ["__catalogue", JSON.stringify(catalogue)]]) {
    const h = vm.newString(value);
    vm.setProp(vm.global, name, h);
    h.dispose();
  }

  const timed = (fn) => {
    sliceStart = performance.now();
    try {
      return fn();
    } finally {
      cpuUsed += performance.now() - sliceStart;
    }
  };
  let main;
  const finish = (result) => {
    // A runtime that cannot be freed cleanly (a handle still held) spoils the worker: the runner
    // replaces it instead of running the next script beside a leaked heap.
    let reusable = !outOfTime;
    try {
      for (const d of waiting.values()) d.dispose();
      if (main?.alive) main.dispose();
      vm.dispose();
      runtime.dispose();
    } catch {
      reusable = false;
    }
    parentPort.postMessage({ type: "done", ...result, output, dropped, cpuMs: Math.round(cpuUsed), reusable });
  };
  const failure = (errH) => {
    const e = vm.dump(errH);
    errH.dispose();
    if (outOfTime) return { kind: "cpu", message: `stopped: the script used its CPU time limit (${limits.cpuMs} ms)` };
    const message = typeof e === "object" && e ? `${e.name ?? "Error"}: ${e.message}` : String(e);
    if (/out of memory/i.test(message)) return { kind: "memory", message: `stopped: the script used its memory limit (${Math.round(limits.memoryBytes / 1048576)} MiB)` };
    const line = typeof e?.stack === "string" ? /script\.ts:(\d+)/.exec(e.stack)?.[1] : undefined;
    return { kind: "runtime", message: line ? `line ${line}: ${message}` : message, ...(line && { line: Number(line) }) };
  };

  const prelude = timed(() => vm.evalCode(PRELUDE, "prelude.js"));
  if (prelude.error) return finish({ error: failure(prelude.error) });
  prelude.value.dispose();
  const evaluated = timed(() => vm.evalCode(`${compiled.js}\nscript()`, "script.ts"));
  if (evaluated.error) return finish({ error: failure(evaluated.error) });
  main = evaluated.value;

  for (;;) {
    const jobs = timed(() => runtime.executePendingJobs());
    if (jobs.error) return finish({ error: failure(jobs.error) });
    const state = vm.getPromiseState(main);
    if (state.type === "fulfilled") {
      let json;
      try {
        json = vm.dump(state.value);
        json = json === undefined ? undefined : JSON.stringify(json);
      } catch {
        json = undefined;
      }
      state.value.dispose();
      return finish({ result: json });
    }
    if (state.type === "rejected") return finish({ error: failure(state.error) });
    if (outOfTime) return finish({ error: { kind: "cpu", message: `stopped: the script used its CPU time limit (${limits.cpuMs} ms)` } });
    if (waiting.size === 0) return finish({ error: { kind: "runtime", message: "the script awaits something that never settles (only tools.* calls resolve here: there are no timers)" } });
    const reply = await new Promise((resolve) => (answer = resolve));
    const deferred = waiting.get(reply.id);
    if (!deferred) continue;
    waiting.delete(reply.id);
    const h = vm.newString(reply.result);
    deferred.resolve(h);
    h.dispose();
    deferred.dispose();
  }
}
