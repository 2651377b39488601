import { MAX_EVENT_TEXT, type OutboundEventBody } from "@mom/contracts";
import type { AgentSessionEvent } from "@mariozechner/pi-coding-agent";
import { fallbackLabel } from "./labelled-tools.js";

export { MAX_EVENT_TEXT }; // the bound is the contract's (libs/contracts/outbound-event.ts)

export function capText(text: string, max = MAX_EVENT_TEXT): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n…[${text.length - max} more characters]`;
}

/** How much of a running tool's output so far each update carries: its tail (the whole output comes with tool_execution_end). */
const UPDATE_TAIL_LINES = 20;
const UPDATE_TAIL_CHARS = 2000;

export function outputTail(text: string): string {
  const tail = text.split("\n").slice(-UPDATE_TAIL_LINES).join("\n");
  return tail.length <= UPDATE_TAIL_CHARS ? tail : tail.slice(-UPDATE_TAIL_CHARS);
}

function resultText(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> } | undefined)?.content;
  if (!Array.isArray(content)) return typeof result === "string" ? result : JSON.stringify(result ?? "");
  return content.map((c) => (c.type === "text" ? (c.text ?? "") : `[${c.type}]`)).join("\n");
}

function capJson(value: unknown): unknown {
  const json = JSON.stringify(value ?? null);
  return json.length <= MAX_EVENT_TEXT ? JSON.parse(json) : { truncated: capText(json) };
}

function slimMessage(message: unknown): { role: string } & Record<string, unknown> {
  const m = message as { role: string; content?: unknown } & Record<string, unknown>;
  const { content, ...rest } = m;
  if (typeof content === "string") return { ...rest, role: m.role, content: capText(content) };
  if (!Array.isArray(content)) return { ...rest, role: m.role };
  const slim = content.map((c: Record<string, unknown>) => {
    if (c.type === "text") return { type: "text", text: capText(String(c.text ?? "")) };
    if (c.type === "thinking") return { type: "thinking", thinking: capText(String(c.thinking ?? "")) };
    if (c.type === "toolCall") return { type: "toolCall", id: c.id, name: c.name, arguments: capJson(c.arguments) };
    if (c.type === "image") return { type: "image", mimeType: c.mimeType };
    return { type: String(c.type) };
  });
  return { ...JSON.parse(JSON.stringify(rest)), role: m.role, content: slim };
}

/**
 * Turns AgentSessionEvents into JSON-safe outbound bodies. Stateful per run: it remembers each
 * tool call's label and start time so the end event can carry both.
 */
export class OutboundMapper {
  private readonly tools = new Map<string, { label: string; startedAt: number }>();

  map(event: AgentSessionEvent): OutboundEventBody | undefined {
    switch (event.type) {
      case "agent_start":
      case "agent_end":
      case "turn_start":
      case "turn_end":
        return { type: event.type };
      case "message_start":
      case "message_end":
        return { type: event.type, message: slimMessage(event.message) };
      case "message_update": {
        const e = event.assistantMessageEvent as unknown as Record<string, unknown>;
        const delta = typeof e.delta === "string" ? capText(e.delta) : undefined;
        const contentIndex = typeof e.contentIndex === "number" ? e.contentIndex : undefined;
        return {
          type: "message_update",
          assistantMessageEvent: { type: String(e.type), ...(contentIndex !== undefined && { contentIndex }), ...(delta !== undefined && { delta }) },
        };
      }
      case "tool_execution_start": {
        const label = fallbackLabel(event.toolName, event.args);
        this.tools.set(event.toolCallId, { label, startedAt: Date.now() });
        return { type: "tool_execution_start", toolCallId: event.toolCallId, toolName: event.toolName, label, args: capJson(event.args) };
      }
      case "tool_execution_update":
        return {
          type: "tool_execution_update",
          toolCallId: event.toolCallId,
          toolName: event.toolName,
          partialText: outputTail(resultText(event.partialResult)),
        };
      case "tool_execution_end": {
        const started = this.tools.get(event.toolCallId);
        this.tools.delete(event.toolCallId);
        return {
          type: "tool_execution_end",
          toolCallId: event.toolCallId,
          toolName: event.toolName,
          label: started?.label ?? event.toolName,
          isError: event.isError,
          resultText: capText(resultText(event.result)),
          durationMs: started ? Date.now() - started.startedAt : 0,
        };
      }
      case "queue_update":
        return { type: "queue_update", steering: [...event.steering], followUp: [...event.followUp] };
      case "compaction_start":
        return { type: "compaction_start", reason: event.reason };
      case "compaction_end":
        return {
          type: "compaction_end",
          reason: event.reason,
          aborted: event.aborted,
          willRetry: event.willRetry,
          ...(event.errorMessage !== undefined && { errorMessage: event.errorMessage }),
        };
      case "auto_retry_start":
        return { type: "auto_retry_start", attempt: event.attempt, maxAttempts: event.maxAttempts, delayMs: event.delayMs, errorMessage: event.errorMessage };
      case "auto_retry_end":
        return { type: "auto_retry_end", success: event.success, attempt: event.attempt, ...(event.finalError !== undefined && { finalError: event.finalError }) };
      default:
        return undefined; // session_info_changed, thinking_level_changed: nothing for adapters
    }
  }
}
