import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import { DEFAULT_TOOL_TIMEOUT_MS, MAX_INVOKE_OUTPUT_CHARS, normaliseOutput, prepareToolArgs, type ToolGate, type ToolSource } from "@mom/tools";
import Type from "typebox";
import { catalogueOf } from "./declarations.js";
import type { ScriptLimits, ScriptOutcome, ScriptPool } from "./script-pool.js";

export const RUN_CODE_TOOL_NAME = "run_code";

export const DEFAULT_SCRIPT_LIMITS: ScriptLimits = { cpuMs: 5_000, memoryBytes: 64 * 1024 * 1024, outputChars: 20_000 };
/** Tool calls one script may make; past it each call is an error value. */
export const MAX_SCRIPT_CALLS = 500;
/** Characters of a nested call's text handed to the script: as much as invoke_tool gives the model. */
const MAX_NESTED_TEXT = MAX_INVOKE_OUTPUT_CHARS;
/** Characters of the returned value given back to the model. */
export const MAX_RESULT_CHARS = 20_000;

export const RunCodeParams = Type.Object({
  code: Type.String({ description: "TypeScript, run as the body of an async function: use await, return a JSON value, console.log to print" }),
});

export interface RunCodeContext {
  /** Qualified channel id, `<adapter>/<channelId>`. */
  channel: string;
  /** The channel's directory. */
  cwd: string;
}

export interface RunCodeOptions {
  limits?: Partial<ScriptLimits>;
  /** Wall-clock bound of the whole script, approvals included. Default: 2 minutes. */
  timeoutMs?: number;
}

export interface RunCodeDetails {
  calls: NestedCall[];
  cpuMs: number;
  error?: ScriptOutcome["error"];
}

interface NestedCall {
  toolCallId: string;
  toolId: string;
  ok: boolean;
  error?: string;
}

type Result = { ok: true; text: string; details?: unknown } | { ok: false; error: string };

/**
 * `run_code`: the model's TypeScript runs in QuickJS in a worker (ScriptPool); each
 * `tools.<id>(input)` comes back here and goes through `gate` like an invoke_tool call —
 * looked up in `source` (already narrowed to what policy lets this channel see), validated,
 * then policy, approval, receipts and timeout, with the run_code call's id on every receipt. A
 * failed or denied call is a Result `{ ok: false, error }` the script can handle. The run_code
 * call is itself gated (risk read: on its own it can only compute).
 */
export function createRunCodeTool(
  source: ToolSource,
  gate: ToolGate,
  pool: ScriptPool,
  ctx: RunCodeContext,
  opts: RunCodeOptions = {},
): ToolDefinition<typeof RunCodeParams, RunCodeDetails> {
  const limits = { ...DEFAULT_SCRIPT_LIMITS, ...opts.limits };
  return {
    name: RUN_CODE_TOOL_NAME,
    label: "Run code",
    description:
      "Run a TypeScript script that calls custom tools as tools.<id>(input) (see Code mode in the system prompt): loops, filters and many calls in one step. " +
      "No network, files or processes inside; each tool call passes policy and approvals as usual and resolves to { ok, text } or { ok: false, error }.",
    parameters: RunCodeParams,
    async execute(toolCallId, params, signal, onUpdate) {
      const code = typeof params.code === "string" ? params.code : "";
      if (!code.trim()) throw new Error("code is empty: pass the script's TypeScript as `code`");
      const calls: NestedCall[] = [];
      return gate.run(
        { toolCallId, toolId: RUN_CODE_TOOL_NAME, risk: "read", args: { code }, timeoutMs: opts.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS },
        signal,
        async (s) => {
          // Ends calls still running when the script is over (one it never awaited).
          const scriptDone = new AbortController();
          const callSignal = AbortSignal.any([s, scriptDone.signal]);
          const tools = source.tools();
          const onCall = async (toolId: string, inputJson: string): Promise<string> => {
            const n = calls.length + 1;
            const call: NestedCall = { toolCallId: `${toolCallId}.${n}`, toolId, ok: false };
            calls.push(call);
            const result = await nestedCall(call, inputJson, n);
            call.ok = result.ok;
            if (!result.ok) call.error = result.error;
            // pi refuses updates once the run is over (a stopped script's last call ends after it).
            if (!callSignal.aborted) onUpdate?.({ content: [{ type: "text", text: progressLine(calls) }], details: { calls, cpuMs: 0 } });
            return JSON.stringify(result);
          };
          const nestedCall = async (call: NestedCall, inputJson: string, n: number): Promise<Result> => {
            if (n > MAX_SCRIPT_CALLS) return { ok: false, error: `a script may make at most ${MAX_SCRIPT_CALLS} tool calls` };
            const tool = source.get(call.toolId);
            if (!tool) return { ok: false, error: `unknown tool ${JSON.stringify(call.toolId)}; tools.search(words) lists the callable ones` };
            let args: Record<string, unknown>;
            try {
              args = prepareToolArgs(tool, JSON.parse(inputJson));
            } catch (err) {
              return { ok: false, error: (err as Error).message };
            }
            try {
              const output = await gate.run(
                { toolCallId: call.toolCallId, toolId: tool.id, risk: tool.risk, args, timeoutMs: tool.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS, parentToolCallId: toolCallId },
                callSignal,
                (cs) => tool.execute(args, { signal: cs, channel: ctx.channel, cwd: ctx.cwd }),
              );
              const { text, details } = normaliseOutput(output);
              const shown = text.length > MAX_NESTED_TEXT ? `${text.slice(0, MAX_NESTED_TEXT)}\n[output truncated: ${text.length - MAX_NESTED_TEXT} more characters]` : text;
              return details === undefined ? { ok: true, text: shown } : { ok: true, text: shown, details: jsonSafe(details) };
            } catch (err) {
              return { ok: false, error: (err as Error)?.message ?? String(err) };
            }
          };
          let outcome: ScriptOutcome;
          try {
            outcome = await pool.run({ code, ids: tools.map((t) => t.id), catalogue: catalogueOf(tools), limits }, onCall, s);
          } finally {
            scriptDone.abort();
          }
          const text = report(outcome, calls, limits);
          if (outcome.error) throw new Error(text);
          return { content: [{ type: "text" as const, text }], details: { calls, cpuMs: outcome.cpuMs } };
        },
      );
    },
  };
}

function report(outcome: ScriptOutcome, calls: NestedCall[], limits: ScriptLimits): string {
  const parts: string[] = [];
  if (outcome.error) parts.push(`Script error (${outcome.error.kind}): ${outcome.error.message}`);
  else if (outcome.result === undefined) parts.push("Returned: nothing");
  else {
    const r = outcome.result;
    parts.push(r.length > MAX_RESULT_CHARS ? `Returned (cut at ${MAX_RESULT_CHARS} of ${r.length} characters):\n${r.slice(0, MAX_RESULT_CHARS)}` : `Returned:\n${r}`);
  }
  if (outcome.output) {
    const note = outcome.dropped ? `\n[output cut at ${limits.outputChars} characters: ${outcome.dropped} more]` : "";
    parts.push(`Printed:\n${outcome.output.replace(/\n$/, "")}${note}`);
  }
  parts.push(callsSummary(calls));
  return parts.join("\n\n");
}

function callsSummary(calls: NestedCall[]): string {
  if (calls.length === 0) return "Tool calls: none";
  const failed = calls.filter((c) => !c.ok);
  const lines = [`Tool calls: ${calls.length} (${calls.length - failed.length} succeeded, ${failed.length} did not)`];
  for (const c of failed.slice(0, 20)) lines.push(`- ${c.toolId} (${c.toolCallId}): ${(c.error ?? "").split("\n")[0]}`);
  if (failed.length > 20) lines.push(`- … ${failed.length - 20} more`);
  return lines.join("\n");
}

function progressLine(calls: NestedCall[]): string {
  const last = calls.at(-1);
  return last ? `${calls.length} ${calls.length === 1 ? "call" : "calls"} · ${last.toolId} ${last.ok ? "✓" : "✗"}` : "";
}

function jsonSafe(v: unknown): unknown {
  try {
    return JSON.parse(JSON.stringify(v));
  } catch {
    return undefined;
  }
}
