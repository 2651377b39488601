import type { ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { Risk, ToolGate } from "@mom/tools";

type AnyTool = ToolDefinition<any, any, any>;

/**
 * Built-in tools' risk: bash can do anything; files written or shared, and posts elsewhere, change the world; web_fetch
 * only reads; spawn on its own only thinks (each of its sub-agent's calls is gated with its own risk).
 * `process` gates each call itself, by action (start and kill as bash; poll and list read).
 */
export const BUILTIN_RISK: Record<string, Risk> = {
  bash: "destructive",
  read: "read",
  write: "write",
  edit: "write",
  apply_patch: "write",
  attach: "write",
  send: "write",
  web_fetch: "read",
  spawn: "read",
  process: "destructive",
};

/** Routes a built-in tool's calls through the gate: policy, approval, receipts, timeout. */
export function gated(tool: AnyTool, gate: ToolGate): AnyTool {
  const risk = BUILTIN_RISK[tool.name] ?? "destructive";
  return {
    ...tool,
    execute: (toolCallId, params, signal, onUpdate, ctx) =>
      gate.run({ toolCallId, toolId: tool.name, risk, args: params }, signal, (s) => tool.execute(toolCallId, params, s, onUpdate, ctx)),
  };
}

/**
 * Adds `note` (the run's tool receipts so far) to the last message the model is about to read,
 * without storing it in the session: the model writes its answer knowing what really happened.
 */
export function withNote<T extends { role: string }>(messages: T[], note: string | undefined): T[] {
  const last = messages.at(-1) as (T & { content?: unknown }) | undefined;
  if (!note || !last || (last.role !== "user" && last.role !== "toolResult")) return messages;
  const content = typeof last.content === "string" ? [{ type: "text", text: last.content }] : Array.isArray(last.content) ? last.content : [];
  return [...messages.slice(0, -1), { ...last, content: [...content, { type: "text", text: `\n\n${note}` }] }];
}
