import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import Type from "typebox";
import type { ToolSource } from "./custom-tools.js";
import { DEFAULT_TOOL_TIMEOUT_MS, type Risk, type ToolGate, type ToolOutput } from "./tool-contract.js";
import { prepareToolArgs } from "./tool-schema.js";

export const INVOKE_TOOL_NAME = "invoke_tool";

/** Characters of a custom tool's output given to the model; the rest is cut with a note. */
export const MAX_INVOKE_OUTPUT_CHARS = 50_000;

export const InvokeToolParams = Type.Object({
  tool: Type.String({ description: "The custom tool's id, e.g. files.archive.create (see the Custom tools section)" }),
  args: Type.Optional(
    Type.Object({}, { additionalProperties: true, description: "The tool's arguments, as listed for it in the Custom tools section" }),
  ),
});

export interface InvokeToolDetails {
  toolId: string;
  risk: Risk;
  /** What the tool returned as `details`, if anything. */
  details?: unknown;
  truncated?: boolean;
}

export interface InvokeToolContext {
  /** Qualified channel id, `<adapter>/<channelId>`. */
  channel: string;
  /** The channel's directory. */
  cwd: string;
}

/**
 * The one model-facing tool that reaches every custom tool: looks `tool` up in `source` at call
 * time (so hot-reloaded tools are used at once), validates and coerces `args` against the tool's
 * schema, and runs it through `gate` (policy, approval, receipts, timeout). Unknown ids and
 * invalid arguments throw before the gate with a message the model can act on.
 */
export function createInvokeTool(
  source: ToolSource,
  gate: ToolGate,
  ctx: InvokeToolContext,
): ToolDefinition<typeof InvokeToolParams, InvokeToolDetails> {
  return {
    name: INVOKE_TOOL_NAME,
    label: "Invoke custom tool",
    description:
      "Call one of the custom host tools listed in the Custom tools section of the system prompt, by id, with its arguments. " +
      "Arguments are validated against that tool's parameters; an invalid call fails with the reason, so fix it and call again. " +
      "Some calls need a person's approval first and may be denied.",
    parameters: InvokeToolParams,
    prepareArguments: (raw: unknown) => normaliseInvokeArgs(raw) as { tool: string; args?: Record<string, unknown> },
    async execute(toolCallId, params, signal) {
      const id = typeof params.tool === "string" ? params.tool.trim() : "";
      const tool = source.get(id);
      if (!tool) {
        const ids = source.tools().map((t) => t.id);
        throw new Error(
          ids.length
            ? `Unknown custom tool ${JSON.stringify(id)}. Available tools: ${ids.join(", ")}.`
            : `Unknown custom tool ${JSON.stringify(id)}: no custom tools are installed.`,
        );
      }
      const args = prepareToolArgs(tool, params.args ?? {});
      const output = await gate.run(
        { toolCallId, toolId: tool.id, risk: tool.risk, args, timeoutMs: tool.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS },
        signal,
        (s) => tool.execute(args, { signal: s, channel: ctx.channel, cwd: ctx.cwd }),
      );
      const { text, details } = normaliseOutput(output);
      const truncated = text.length > MAX_INVOKE_OUTPUT_CHARS;
      const shown = truncated
        ? `${text.slice(0, MAX_INVOKE_OUTPUT_CHARS)}\n[output truncated: ${text.length - MAX_INVOKE_OUTPUT_CHARS} more characters]`
        : text;
      return {
        content: [{ type: "text", text: shown || "(no output)" }],
        details: { toolId: tool.id, risk: tool.risk, ...(details === undefined ? {} : { details }), ...(truncated ? { truncated } : {}) },
      };
    },
  };
}

/**
 * Models get the wrapper wrong in a few predictable ways; accept them: `args` sent as a JSON
 * string, or the tool's arguments put next to `tool` instead of inside `args`.
 */
export function normaliseInvokeArgs(raw: unknown): unknown {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return raw;
  const { tool, args, ...rest } = raw as Record<string, unknown>;
  let parsed: unknown = args;
  if (typeof args === "string") {
    try {
      parsed = args.trim() ? JSON.parse(args) : {};
    } catch {
      parsed = args;
    }
  }
  if (parsed === undefined || parsed === null) {
    parsed = Object.keys(rest).length ? rest : undefined;
    return parsed === undefined ? { tool } : { tool, args: parsed };
  }
  return { ...rest, tool, args: parsed };
}

/** A tool's return value as text plus details (anything not a string or `{ text }` becomes JSON). */
export function normaliseOutput(output: ToolOutput | unknown): { text: string; details?: unknown } {
  if (typeof output === "string") return { text: output };
  if (output === undefined || output === null) return { text: "" };
  if (typeof output === "object" && typeof (output as { text?: unknown }).text === "string") {
    const o = output as { text: string; details?: unknown };
    return { text: o.text, details: o.details };
  }
  try {
    return { text: JSON.stringify(output, null, 2) };
  } catch {
    return { text: String(output) };
  }
}
