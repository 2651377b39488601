import { afterAll, describe, expect, it } from "@jest/globals";
import type { GateCall, MomTool, ToolGate, ToolSource } from "@mom/tools";
import Type from "typebox";
import { formatCodeModeForPrompt, toolDeclarations } from "./declarations.js";
import { createRunCodeTool, type RunCodeDetails } from "./run-code-tool.js";
import { ScriptPool } from "./script-pool.js";

const pool = new ScriptPool();
afterAll(() => pool.close());

const issues = new Map<number, { title: string; labels: string[] }>(Array.from({ length: 25 }, (_, i) => [i + 1, { title: i % 3 === 0 ? `crash in parser ${i}` : `docs ${i}`, labels: [] }]));
let slowSignal: AbortSignal | undefined;
/** Called when gh.slow.wait starts: a stop can be timed to land while the tool runs, however slow the machine. */
let onSlowStart: (() => void) | undefined;

const tools: MomTool[] = [
  {
    id: "gh.issues.list",
    description: "Open issues",
    risk: "read",
    parameters: Type.Object({}),
    execute: async () => ({ text: "listed", details: [...issues].map(([number, i]) => ({ number, title: i.title })) }),
  },
  {
    id: "gh.issue.label",
    description: "Add a label",
    risk: "write",
    parameters: Type.Object({ number: Type.Integer({ minimum: 1 }), label: Type.String() }),
    execute: async (a: { number: number; label: string }) => {
      issues.get(a.number)!.labels.push(a.label);
      return `labelled #${a.number}`;
    },
  },
  {
    id: "gh.slow.wait",
    description: "Takes a while",
    risk: "read",
    parameters: Type.Object({}),
    execute: (_a, ctx) => {
      slowSignal = ctx.signal;
      onSlowStart?.();
      return new Promise((resolve) => setTimeout(() => resolve("late"), 10_000));
    },
  },
];
const source: ToolSource = { tools: () => tools, get: (id) => tools.find((t) => t.id === id) };

/** A gate that records calls, denies what `deny` says and makes `ask` calls wait like an approval. */
function recordingGate(o: { deny?: (c: GateCall) => boolean; approvalMs?: (c: GateCall) => number } = {}) {
  const calls: GateCall[] = [];
  const gate: ToolGate = {
    async run(call, signal, fn) {
      calls.push(call);
      const wait = o.approvalMs?.(call) ?? 0;
      if (wait) await new Promise((r) => setTimeout(r, wait));
      if (o.deny?.(call)) throw new Error(`${call.toolId} was not run: denied by @admin.`);
      return fn(signal ?? new AbortController().signal);
    },
  };
  return { gate, calls };
}

const ctx = { channel: "cli/local", cwd: "/tmp" };
type Run = { text: string; details?: RunCodeDetails; error?: string };

async function runCode(code: string, gate: ToolGate, opts: Parameters<typeof createRunCodeTool>[4] = {}, signal?: AbortSignal): Promise<Run> {
  const tool = createRunCodeTool(source, gate, pool, ctx, opts);
  try {
    const r = await tool.execute("call-1", { code }, signal, undefined, undefined as never);
    return { text: (r.content[0] as { text: string }).text, details: r.details };
  } catch (err) {
    return { text: "", error: (err as Error).message };
  }
}

describe("run_code", () => {
  it("composes twenty calls through the gate, each carrying the run_code call's id, one of them denied and handled", async () => {
    const { gate, calls } = recordingGate({ deny: (c) => c.toolId === "gh.issue.label" && (c.args as { number: number }).number === 4 });
    const r = await runCode(
      `
const list = await tools.gh.issues.list({});
const crashes = (list.details as { number: number; title: string }[]).filter((i) => i.title.includes("crash"));
const done: number[] = [], refused: string[] = [];
for (const i of crashes) {
  const r = await tools.gh.issue.label({ number: i.number, label: "bug" });
  if (r.ok) done.push(i.number); else refused.push(i.number + ": " + r.error);
}
console.log("labelled", done.length);
return { done, refused };`,
      gate,
    );
    expect(r.error).toBeUndefined();
    const returned = JSON.parse(r.text.split("Returned:\n")[1]!.split("\n\nPrinted")[0]!);
    expect(returned.done).toHaveLength(8);
    expect(returned.refused).toEqual(["4: gh.issue.label was not run: denied by @admin."]);
    expect(r.text).toContain("Printed:\nlabelled 8");
    expect(r.text).toContain("Tool calls: 10 (9 succeeded, 1 did not)");
    // The run_code call itself, then every nested one with its own id and the parent's.
    expect(calls[0]).toMatchObject({ toolId: "run_code", risk: "read", toolCallId: "call-1" });
    expect(calls.slice(1).map((c) => [c.toolCallId, c.parentToolCallId])).toEqual(Array.from({ length: 10 }, (_, i) => [`call-1.${i + 1}`, "call-1"]));
    expect(calls.slice(2).every((c) => c.risk === "write")).toBe(true);
    expect(issues.get(4)!.labels).toEqual([]);
    expect(issues.get(7)!.labels).toEqual(["bug"]);
  });

  it("waits while an approval is pending, however long, without spending its CPU time", async () => {
    const { gate } = recordingGate({ approvalMs: (c) => (c.toolId === "gh.issue.label" ? 1500 : 0) });
    const r = await runCode(`const r = await tools.gh.issue.label({ number: 2, label: "later" }); return r.ok;`, gate, { limits: { cpuMs: 300 } });
    expect(r.error).toBeUndefined();
    expect(r.text).toContain("Returned:\ntrue");
  });

  it("names the line of a syntax error and of a runtime TypeError, and runs nothing", async () => {
    const { gate, calls } = recordingGate();
    const syntax = await runCode(`const a = 1;\nconst b = ;\nawait tools.gh.issue.label({ number: 1, label: "x" });`, gate);
    expect(syntax.error).toMatch(/^Script error \(syntax\): line 2: /);
    expect(calls.map((c) => c.toolId)).toEqual(["run_code"]);
    const typeError = await runCode(`const a = 1;\n\nconst n: number = (null as any).length;`, gate);
    expect(typeError.error).toContain("Script error (runtime): line 3: TypeError: cannot read property 'length' of null");
  });

  it("stops an endless loop at its CPU limit and a memory bomb at its memory limit; the next script runs", async () => {
    const { gate } = recordingGate();
    const loop = await runCode(`try { for (;;) {} } catch { return "escaped" }`, gate, { limits: { cpuMs: 300 } });
    expect(loop.error).toContain("Script error (cpu): stopped: the script used its CPU time limit (300 ms)");
    const bomb = await runCode(`const a: object[] = []; for (;;) a.push({ n: a.length, s: "item " + a.length });`, gate, { limits: { memoryBytes: 16 * 1024 * 1024, cpuMs: 20_000 } });
    expect(bomb.error).toContain("Script error (memory): stopped: the script used its memory limit (16 MiB)");
    const after = await runCode(`return 6 * 7`, gate);
    expect(after.text).toContain("Returned:\n42");
  });

  it("turns an unknown tool, invalid input and input that is not JSON into error values", async () => {
    const { gate, calls } = recordingGate();
    const r = await runCode(
      `
const a = await tools.call("gh.repo.delete", {});
const b = await tools.gh.issue.label({ number: "many" });
const c: any = {}; c.self = c;
const d = await tools.gh.issue.label(c);
const e = await tools.call("run_code", { code: "1" });
return [a, b, d, e].map((r) => r.ok ? "ok" : r.error.split("\\n")[0]);`,
      gate,
    );
    const returned = JSON.parse(r.text.split("Returned:\n")[1]!.split("\n\nTool calls")[0]!);
    expect(returned[0]).toMatch(/^unknown tool "gh.repo.delete"/);
    expect(returned[1]).toBe("Invalid arguments for gh.issue.label:");
    expect(returned[2]).toMatch(/^input is not JSON/);
    expect(returned[3]).toMatch(/^unknown tool "run_code"/);
    expect(calls.map((c) => c.toolId)).toEqual(["run_code"]);
  });

  it("cuts output beyond the cap with a note", async () => {
    const { gate } = recordingGate();
    const r = await runCode(`for (let i = 0; i < 1000; i++) console.log("line " + i);`, gate, { limits: { outputChars: 100 } });
    expect(r.text).toMatch(/\[output cut at 100 characters: \d+ more\]/);
  });

  it("ends at once on stop, in a loop or while a tool runs (whose signal is aborted too)", async () => {
    const { gate } = recordingGate();
    const stop = new AbortController();
    const started = Date.now();
    setTimeout(() => stop.abort(), 300);
    const loop = await runCode(`for (;;) {}`, gate, { limits: { cpuMs: 30_000 } }, stop.signal);
    expect(loop.error).toContain("Script error (stopped)");
    expect(Date.now() - started).toBeLessThan(5_000);

    const stop2 = new AbortController();
    onSlowStart = () => setTimeout(() => stop2.abort(), 100);
    try {
      const waiting = await runCode(`await tools.gh.slow.wait({}); return "never"`, gate, {}, stop2.signal);
      expect(waiting.error).toContain("stopped");
      expect(slowSignal?.aborted).toBe(true);
    } finally {
      onSlowStart = undefined;
    }
  });

  it("gives the script no way out but tools: no require, process, fetch, timers or host functions", async () => {
    const { gate } = recordingGate();
    const r = await runCode(
      `return [typeof require, typeof process, typeof fetch, typeof setTimeout, typeof (globalThis as any).__call, typeof (globalThis as any).__print, typeof (globalThis as any).std, typeof (globalThis as any).os, Object.isFrozen(tools)].join(",")`,
      gate,
    );
    expect(r.text).toContain('"undefined,undefined,undefined,undefined,undefined,undefined,undefined,undefined,true"');
  });

  it("ends a call the script never awaited when the script is over", async () => {
    const { gate } = recordingGate();
    slowSignal = undefined;
    const r = await runCode(`tools.gh.slow.wait({}); return "done"`, gate);
    expect(r.text).toContain('Returned:\n"done"');
    await new Promise((res) => setTimeout(res, 50));
    expect(slowSignal?.aborted).toBe(true);
  });
});

describe("code-mode declarations", () => {
  it("declares tools nested by id, typed from their schemas", () => {
    const d = toolDeclarations(tools);
    expect(d).toContain("declare const tools: {\n  gh: {\n    issue: {");
    expect(d).toContain("label(input: { number: integer, label: string }): Promise<Result>;");
    expect(d).toContain("/** Add a label (risk: write) */");
    expect(formatCodeModeForPrompt(tools, "run_code")).toContain("```ts\ntype Result =");
  });

  it("lists only ids beyond its budget (the script searches and describes)", () => {
    const many: MomTool[] = Array.from({ length: 400 }, (_, i) => ({ ...tools[1]!, id: `svc${i}.thing.do`, description: "x".repeat(60) }));
    const section = formatCodeModeForPrompt(many, "run_code");
    expect(section).toContain("// 400 tools: svc0.thing.do");
    expect(section).toContain("tools.describe(id)");
  });

  it("searches and describes tools from inside a script", async () => {
    const { gate } = recordingGate();
    const r = await runCode(`return { found: tools.search("label").map((t) => t.id), decl: tools.describe("gh.issue.label") }`, gate);
    expect(r.text).toContain('"found":["gh.issue.label"]');
    expect(r.text).toContain("label(input: { number: integer, label: string })");
  });
});
