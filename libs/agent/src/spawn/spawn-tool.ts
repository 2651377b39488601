import type { Usage as PiUsage } from "@mariozechner/pi-ai";
import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { SpawnConfig } from "@mom/config";
import type { ToolGate } from "@mom/tools";
import Type from "typebox";
import { BUILTIN_RISK } from "../gated-tools.js";
import { createMomTools } from "../labelled-tools.js";
import { nestedGate, runSubAgent, type SubAgentEnv, type SubAgentResult } from "./sub-agent.js";

type AnyTool = ToolDefinition<any, any, any>;

export const SPAWN_TOOL_NAME = "spawn";
/** Characters of a sub-agent's answer (or of what it had so far) handed to the parent. */
export const MAX_SPAWN_RESULT_CHARS = 20_000;
/** The spawn call's own timeout past the child's time budget: the budget ends the child first, with its result. */
const GATE_GRACE_MS = 30_000;

export const SpawnParams = Type.Object({
  task: Type.String({ minLength: 1, description: "The whole task for the sub-agent: it sees nothing of this conversation but this text" }),
  tools: Type.Array(Type.String(), { minItems: 1, description: 'The tools it may use: a subset of yours, e.g. ["read", "bash"] (never spawn)' }),
  maxTokens: Type.Optional(Type.Integer({ minimum: 1, description: "Its token budget (input and output of all its model calls)" })),
  timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, description: "Its time budget in seconds" })),
});

export interface SpawnDetails {
  /** "running" in progress updates. */
  end: SubAgentResult["end"] | "running";
  tokensUsed: number;
  calls: SubAgentResult["calls"];
  ms: number;
}

export interface SpawnToolOptions {
  env: SubAgentEnv;
  limits: SpawnConfig;
  /** The channel's file tools' home for long output (bash keeps it there). */
  scratchDir: string;
  /** The parent's gate; the child's calls go through it too, marked with the spawn call's id. */
  gate?: ToolGate;
  /** The tools the parent may call now (policy): a child gets at most these. */
  available: () => string[];
  /** The runner's other tools (web_fetch, invoke_tool, run_code) built around the given gate. */
  extraTools?: (gate: ToolGate | undefined) => AnyTool[];
  /** Undefined when the current run may start another sub-agent, else why not. */
  admit: () => string | undefined;
  /** What the child's model calls used, added to the parent run's usage. */
  onUsage: (usage: PiUsage) => void;
}

/** Tools a sub-agent never gets: no nested sub-agents, and files reach the chat only through the parent. */
const NEVER_FOR_CHILD = new Set([SPAWN_TOOL_NAME, "attach"]);

/** The system prompt's note on spawn, when the channel may use it. */
export function spawnPrompt(limits: SpawnConfig): string {
  return `## Sub-agents
\`${SPAWN_TOOL_NAME}\` hands one self-contained task (research a codebase, try a fix, sum up long output) to a sub-agent with a fresh context and the tools you give it, and returns its final answer to you. Its work and tool output stay out of your context. It sees nothing of this conversation: put everything it needs in \`task\`. Give it only the tools the task needs. Budget: ${limits.tokens.toLocaleString("en-US")} tokens and ${limits.seconds} s unless you say otherwise (at most ${limits.maxTokens.toLocaleString("en-US")} and ${limits.maxSeconds} s); past either it is stopped and you get what it had so far. At most ${limits.maxPerRun} per run.`;
}

/**
 * `spawn`: starts a sub-agent (sub-agent.ts) on a task with a subset of the parent's tools and a
 * token and time budget, and gives its final answer back as the call's result. The call itself is
 * gated (risk read: on its own it only thinks — every tool call of the child passes the same gate,
 * with its own risk, policy, approval and receipts). A child cut off by its budget, or failing, ends
 * the call as failed with the reason and what it had written so far.
 */
export function createSpawnTool(o: SpawnToolOptions): ToolDefinition<typeof SpawnParams, SpawnDetails> {
  const { limits } = o;
  return {
    name: SPAWN_TOOL_NAME,
    label: "Start a sub-agent",
    description:
      "Hand a self-contained task to a sub-agent with its own fresh context, a subset of your tools and a token and time budget; its final answer comes back as this call's result. " +
      `Budget defaults: ${limits.tokens} tokens, ${limits.seconds} s (at most ${limits.maxTokens} tokens, ${limits.maxSeconds} s).`,
    parameters: SpawnParams,
    async execute(toolCallId, params, signal, onUpdate) {
      const task = typeof params.task === "string" ? params.task.trim() : "";
      const requested = [...new Set(Array.isArray(params.tools) ? params.tools.map(String) : [])];
      const tokens = Math.min(params.maxTokens ?? limits.tokens, limits.maxTokens);
      const seconds = Math.min(params.timeoutSeconds ?? limits.seconds, limits.maxSeconds);
      const run = async (s: AbortSignal) => {
        const started = Date.now();
        if (!task) throw new Error("task is empty: say what the sub-agent should do");
        const refused = o.admit();
        if (refused) throw new Error(refused);
        const gate = o.gate && nestedGate(o.gate, toolCallId);
        const available = new Set(o.available().filter((name) => !NEVER_FOR_CHILD.has(name)));
        const candidates = [...createMomTools(o.env.sandbox, o.scratchDir, gate), ...(o.extraTools?.(gate) ?? [])].filter((t) => available.has(t.name));
        const offered = candidates.map((t) => t.name);
        const missing = requested.filter((name) => !offered.includes(name));
        if (missing.length || !requested.length) {
          throw new Error(`a sub-agent here may have only ${offered.join(", ") || "no tools"}; ${missing.join(", ") || "none"} ${missing.length === 1 ? "is" : "are"} not among them (never spawn, attach, or a tool policy hides from you)`);
        }
        const result = await runSubAgent(o.env, {
          spawnCallId: toolCallId,
          task,
          tools: candidates.filter((t) => requested.includes(t.name)),
          tokens,
          seconds,
          signal: s,
          onProgress: (line) => {
            if (!s.aborted) onUpdate?.({ content: [{ type: "text", text: line }], details: { end: "running", tokensUsed: 0, calls: [], ms: Date.now() - started } });
          },
        });
        o.onUsage(result.usage);
        const details: SpawnDetails = { end: result.end, tokensUsed: result.tokensUsed, calls: result.calls, ms: result.ms };
        const text = report(result, tokens);
        if (result.end === "stopped") throw new Error("aborted");
        if (result.end !== "done") throw new Error(text);
        return { content: [{ type: "text" as const, text }], details };
      };
      const args = { task, tools: requested, maxTokens: tokens, timeoutSeconds: seconds };
      if (!o.gate) return run(signal ?? new AbortController().signal);
      return o.gate.run({ toolCallId, toolId: SPAWN_TOOL_NAME, risk: BUILTIN_RISK[SPAWN_TOOL_NAME] ?? "read", args, timeoutMs: seconds * 1000 + GATE_GRACE_MS }, signal, run);
    },
  };
}

/** The child's answer, or why it stopped and what it had so far, then one line of what it did. */
function report(r: SubAgentResult, tokens: number): string {
  const calls = r.calls.length ? `${r.calls.length} tool call${r.calls.length === 1 ? "" : "s"} (${r.calls.map((c) => `${c.toolName} ${c.ok ? "✓" : "✗"}`).join(", ")})` : "no tool calls";
  const footer = `[sub-agent: ${calls}; ${r.tokensUsed.toLocaleString("en-US")} of its ${tokens.toLocaleString("en-US")} tokens; ${Math.round(r.ms / 1000)} s]`;
  if (r.end === "done") return `${cut(r.text || "(it gave no answer)", "head")}\n\n${footer}`;
  const soFar = r.text ? cut(r.text, "tail") : "(nothing written yet)";
  const why = (r.reason ?? "").replace(/\.$/, "");
  return `Sub-agent ${r.end === "failed" ? "failed" : "stopped"}: ${why}.\nWhat it had so far:\n${soFar}\n\n${footer}`;
}

// A finished answer keeps its start; a cut-off one its latest part, where it had got to.
function cut(text: string, keep: "head" | "tail"): string {
  if (text.length <= MAX_SPAWN_RESULT_CHARS) return text;
  const dropped = text.length - MAX_SPAWN_RESULT_CHARS;
  return keep === "head"
    ? `${text.slice(0, MAX_SPAWN_RESULT_CHARS)}\n[cut: ${dropped} more characters]`
    : `[cut: ${dropped} earlier characters]\n${text.slice(-MAX_SPAWN_RESULT_CHARS)}`;
}
