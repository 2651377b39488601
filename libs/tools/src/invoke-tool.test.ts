import { describe, expect, it } from "@jest/globals";
import Type from "typebox";
import type { ToolSource } from "./custom-tools.js";
import { createInvokeTool, InvokeToolParams, MAX_INVOKE_OUTPUT_CHARS, normaliseInvokeArgs } from "./invoke-tool.js";
import { formatCustomToolsForPrompt } from "./prompt.js";
import { runWithTimeout, ToolTimeoutError } from "./timeout.js";
import { DEFAULT_TOOL_TIMEOUT_MS, type GateCall, type MomTool, type ToolCallContext, type ToolGate } from "./tool-contract.js";
import { toolContractErrors } from "./tool-schema.js";

/** Records calls; denies ids in `deny`; enforces the timeout like the real gate must. */
class TestGate implements ToolGate {
  calls: GateCall[] = [];
  constructor(private readonly deny: string[] = []) {}
  run<T>(call: GateCall, signal: AbortSignal | undefined, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    this.calls.push(call);
    if (this.deny.includes(call.toolId)) return Promise.reject(new Error(`Denied by policy: ${call.toolId}`));
    return runWithTimeout(fn, { toolId: call.toolId, timeoutMs: call.timeoutMs, signal });
  }
}

const source = (tools: MomTool[]): ToolSource => ({
  tools: () => tools,
  get: (id) => tools.find((t) => t.id === id),
});

const AddParams = Type.Object({
  a: Type.Number({ description: "first" }),
  b: Type.Integer({ description: "second", minimum: 0 }),
  mode: Type.Optional(Type.Union([Type.Literal("sum"), Type.Literal("concat")])),
  loud: Type.Boolean({ default: false }),
  tags: Type.Optional(Type.Array(Type.String())),
});

function addTool(seen: { args?: unknown; ctx?: ToolCallContext } = {}): MomTool<typeof AddParams> {
  return {
    id: "math.numbers.add",
    description: "Adds two numbers.",
    risk: "read",
    parameters: AddParams,
    async execute(args, ctx) {
      seen.args = args;
      seen.ctx = ctx;
      const r = args.mode === "concat" ? `${args.a}${args.b}` : String(args.a + args.b);
      return { text: args.loud ? `${r}!` : r, details: { r } };
    },
  };
}

const slowTool: MomTool = {
  id: "test.slow.wait",
  description: "Waits until aborted.",
  risk: "write",
  parameters: Type.Object({}),
  timeoutMs: 150,
  execute: (_args, ctx) =>
    new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(new Error("aborted inside tool")), { once: true })),
};

const ctx = { channel: "cli/general", cwd: "/tmp/channel" };

describe("invoke_tool", () => {
  it("is named invoke_tool with a tool id and args, and no label of its own", () => {
    const t = createInvokeTool(source([]), new TestGate(), ctx);
    expect(t.name).toBe("invoke_tool");
    expect(Object.keys(t.parameters.properties)).toEqual(["tool", "args"]);
    expect(t.parameters.required).toEqual(["tool"]);
    expect(t.parameters).toBe(InvokeToolParams);
  });

  it("runs a tool through the gate with coerced arguments and returns its text", async () => {
    const seen: { args?: unknown; ctx?: ToolCallContext } = {};
    const gate = new TestGate();
    const t = createInvokeTool(source([addTool(seen)]), gate, ctx);
    const result = await t.execute("call-1", { tool: "math.numbers.add", args: { a: "5", b: "2", tags: "x", extra: "dropped" } }, undefined, undefined, undefined as never);

    expect(result.content).toEqual([{ type: "text", text: "7" }]);
    expect(result.details).toEqual({ toolId: "math.numbers.add", risk: "read", details: { r: "7" } });
    expect(seen.args).toEqual({ a: 5, b: 2, loud: false, tags: ["x"] });
    expect(seen.ctx?.channel).toBe("cli/general");
    expect(seen.ctx?.cwd).toBe("/tmp/channel");
    expect(seen.ctx?.signal).toBeInstanceOf(AbortSignal);
    expect(gate.calls).toEqual([
      { toolCallId: "call-1", toolId: "math.numbers.add", risk: "read", args: { a: 5, b: 2, loud: false, tags: ["x"] }, timeoutMs: DEFAULT_TOOL_TIMEOUT_MS },
    ]);
  });

  it("rejects an unknown id, listing the available ones, without calling the gate", async () => {
    const gate = new TestGate();
    const t = createInvokeTool(source([addTool()]), gate, ctx);
    await expect(t.execute("c", { tool: "math.numbers.sub", args: {} }, undefined, undefined, undefined as never)).rejects.toThrow(
      'Unknown custom tool "math.numbers.sub". Available tools: math.numbers.add.',
    );
    const empty = createInvokeTool(source([]), gate, ctx);
    await expect(empty.execute("c", { tool: "x.y.z" }, undefined, undefined, undefined as never)).rejects.toThrow("no custom tools are installed");
    expect(gate.calls).toEqual([]);
  });

  it("rejects invalid arguments with a message naming each field, without calling the gate", async () => {
    const gate = new TestGate();
    const t = createInvokeTool(source([addTool()]), gate, ctx);
    const err = await t
      .execute("c", { tool: "math.numbers.add", args: { a: "five", b: -1, mode: "divide" } }, undefined, undefined, undefined as never)
      .then(() => undefined, (e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    const msg = (err as Error).message;
    expect(msg).toContain("Invalid arguments for math.numbers.add:");
    expect(msg).toContain('a: expected number, got "five"');
    expect(msg).toMatch(/b: expected integer, got -1 \(.*0.*\)/);
    expect(msg).toContain('mode: expected "sum" | "concat", got "divide"');
    expect(msg).toContain("Expected args: { a: number, b: integer, mode?: \"sum\" | \"concat\", loud?: boolean, tags?: string[] }");
    expect(gate.calls).toEqual([]);

    const missing = await t.execute("c", { tool: "math.numbers.add", args: { a: 1 } }, undefined, undefined, undefined as never).catch((e: Error) => e.message);
    expect(missing).toContain("b: required (integer)");
  });

  it("names unknown arguments when the schema forbids them", async () => {
    const strict: MomTool = {
      id: "test.strict.run",
      description: "strict",
      risk: "read",
      parameters: Type.Object({ path: Type.String() }, { additionalProperties: false }),
      execute: async () => "ok",
    };
    const t = createInvokeTool(source([strict]), new TestGate(), ctx);
    const msg = await t.execute("c", { tool: "test.strict.run", args: { path: "a", pth: "b" } }, undefined, undefined, undefined as never).catch((e: Error) => e.message);
    expect(msg).toContain("pth: unknown argument (accepted: path)");
  });

  it("propagates a denial from the gate and never runs the tool", async () => {
    const seen: { args?: unknown } = {};
    const t = createInvokeTool(source([addTool(seen)]), new TestGate(["math.numbers.add"]), ctx);
    await expect(t.execute("c", { tool: "math.numbers.add", args: { a: 1, b: 2 } }, undefined, undefined, undefined as never)).rejects.toThrow(
      "Denied by policy: math.numbers.add",
    );
    expect(seen.args).toBeUndefined();
  });

  it("gives the gate the tool's own timeout, which aborts the tool's signal", async () => {
    const gate = new TestGate();
    const t = createInvokeTool(source([slowTool]), gate, ctx);
    const started = Date.now();
    const err = await t.execute("c", { tool: "test.slow.wait", args: {} }, undefined, undefined, undefined as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolTimeoutError);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(gate.calls[0]).toMatchObject({ toolId: "test.slow.wait", risk: "write", timeoutMs: 150 });
  });

  it("passes the run's abort signal to the gate", async () => {
    const gate = new TestGate();
    const t = createInvokeTool(source([{ ...slowTool, timeoutMs: 60_000 }]), gate, ctx);
    const run = new AbortController();
    const pending = t.execute("c", { tool: "test.slow.wait", args: {} }, run.signal, undefined, undefined as never);
    setTimeout(() => run.abort(new Error("run aborted")), 50);
    await expect(pending).rejects.toThrow("run aborted");
  });

  it("turns plain strings, empty and odd outputs into text, and caps long output", async () => {
    const outputs: unknown[] = ["plain", "", undefined, { count: 2 }, "x".repeat(MAX_INVOKE_OUTPUT_CHARS + 10)];
    const tool: MomTool = { id: "test.out.put", description: "d", risk: "read", parameters: Type.Object({}), execute: async () => outputs.shift() as string };
    const t = createInvokeTool(source([tool]), new TestGate(), ctx);
    const text = async () => ((await t.execute("c", { tool: "test.out.put" }, undefined, undefined, undefined as never)).content[0] as { text: string }).text;
    expect(await text()).toBe("plain");
    expect(await text()).toBe("(no output)");
    expect(await text()).toBe("(no output)");
    expect(await text()).toBe('{\n  "count": 2\n}');
    const long = await t.execute("c", { tool: "test.out.put" }, undefined, undefined, undefined as never);
    expect((long.content[0] as { text: string }).text).toMatch(/\[output truncated: 10 more characters\]$/);
    expect(long.details.truncated).toBe(true);
  });

  it("accepts args sent as a JSON string or put next to `tool`", () => {
    expect(normaliseInvokeArgs({ tool: "a.b.c", args: '{"n": 1}' })).toEqual({ tool: "a.b.c", args: { n: 1 } });
    expect(normaliseInvokeArgs({ tool: "a.b.c", n: 1 })).toEqual({ tool: "a.b.c", args: { n: 1 } });
    expect(normaliseInvokeArgs({ tool: "a.b.c" })).toEqual({ tool: "a.b.c" });
    expect(normaliseInvokeArgs({ tool: "a.b.c", args: { n: 1 } })).toEqual({ tool: "a.b.c", args: { n: 1 } });
    const t = createInvokeTool(source([]), new TestGate(), ctx);
    expect(t.prepareArguments!({ tool: "a.b.c", args: "" })).toEqual({ tool: "a.b.c", args: {} });
  });
});

describe("toolContractErrors", () => {
  it("accepts a valid tool and explains each problem of an invalid one", () => {
    expect(toolContractErrors(addTool())).toEqual([]);
    expect(toolContractErrors(null)).toEqual(["expected a tool object, got null"]);
    const errors = toolContractErrors({ id: "two.parts", description: " ", risk: "high", parameters: Type.String(), execute: "no", timeoutMs: -1 });
    expect(errors).toHaveLength(6);
    expect(errors.join("\n")).toMatch(/id "two.parts" must look like integration.resource.action/);
    expect(toolContractErrors({ ...addTool(), id: "a.b.c.d" })).toHaveLength(1);
    expect(toolContractErrors({ ...addTool(), id: "git-hub.issues_x.create" })).toEqual([]);
  });
});

describe("formatCustomToolsForPrompt", () => {
  it("is empty without tools", () => {
    expect(formatCustomToolsForPrompt([])).toBe("");
  });

  it("lists id, risk, description and each parameter, and says how to call them", () => {
    const text = formatCustomToolsForPrompt([slowTool, addTool()]);
    expect(text).toContain("## Custom tools");
    expect(text).toContain('`invoke_tool` tool: `{"tool": "<id>", "args": {...}}`');
    expect(text).toContain("- math.numbers.add (risk: read): Adds two numbers.");
    expect(text).toContain("  - a (number, required): first");
    expect(text).toContain("  - b (integer, required, >= 0): second");
    expect(text).toContain('  - mode ("sum" | "concat", optional)');
    expect(text).toContain("  - loud (boolean, optional, default false)");
    expect(text).toContain("  - tags (string[], optional)");
    expect(text).toContain("- test.slow.wait (risk: write): Waits until aborted.\n  args: none");
    expect(text.indexOf("math.numbers.add")).toBeLessThan(text.indexOf("test.slow.wait"));
  });
});
