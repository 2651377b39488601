import type { RunOutcome } from "@mom/agent";
import type { OutboundEventBody } from "@mom/contracts";
import { endSpan, metrics, type Span, SpanKind, startSpan, traceparentOf } from "@mom/observability";

interface AssistantMessage {
  role: string;
  provider?: string;
  model?: string;
  stopReason?: string;
  errorMessage?: string;
  usage?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number; cost?: { total?: number } };
}

const TOKEN_KINDS = [
  ["input", "input"],
  ["output", "output"],
  ["cacheRead", "cache_read"],
  ["cacheWrite", "cache_write"],
] as const;

/**
 * The metrics and spans of one run, fed its events on their way to the publisher. A run span (child
 * of the ingress's `traceparent`), one span per model call (turn start to the assistant message's
 * end) and one per tool call. With tracing off the spans stay undefined and an event costs a switch.
 */
export class RunTelemetry {
  /** What the run's outbound events carry: the run span's context, else the ingress's, passed on. */
  readonly traceparent?: string;
  private readonly span?: Span;
  private model?: Span;
  private readonly tools = new Map<string, Span>();

  constructor(o: { traceparent?: string; channel: string; runId: string; messageId: string }) {
    this.span = startSpan("mom.run", {
      parent: o.traceparent,
      kind: SpanKind.CONSUMER,
      attributes: { "mom.channel": o.channel, "mom.run_id": o.runId, "mom.message_id": o.messageId },
    });
    this.traceparent = traceparentOf(this.span) ?? o.traceparent;
  }

  event(body: OutboundEventBody): void {
    switch (body.type) {
      case "turn_start":
        if (this.span) {
          endSpan(this.model);
          this.model = startSpan("mom.model_call", { parent: this.span, kind: SpanKind.CLIENT });
        }
        return;
      case "message_end":
        if (body.message.role === "assistant") this.modelCallEnded(body.message as AssistantMessage);
        return;
      case "tool_execution_start":
        if (this.span) this.tools.set(body.toolCallId, startSpan(`mom.tool ${body.toolName}`, { parent: this.span, attributes: { "mom.tool": body.toolName, "mom.tool_call_id": body.toolCallId } })!);
        return;
      case "tool_execution_end":
        metrics.toolCalls.inc({ tool: body.toolName, outcome: body.isError ? "error" : "ok" });
        if (this.span) {
          endSpan(this.tools.get(body.toolCallId), body.isError ? "tool call failed" : undefined);
          this.tools.delete(body.toolCallId);
        }
        return;
      default:
        return;
    }
  }

  end(outcome: Pick<RunOutcome, "stopReason" | "errorMessage" | "usage">, durationMs: number): void {
    metrics.runs.inc({ outcome: outcome.stopReason });
    metrics.runDuration.observe({ outcome: outcome.stopReason }, durationMs / 1000);
    if (!this.span) return;
    for (const s of this.tools.values()) endSpan(s, "the run ended first");
    this.tools.clear();
    endSpan(this.model, "the run ended first");
    this.model = undefined;
    endSpan(this.span, outcome.stopReason === "error" ? (outcome.errorMessage ?? "error") : undefined, {
      "mom.stop_reason": outcome.stopReason,
      "mom.tokens": outcome.usage.totalTokens,
    });
  }

  private modelCallEnded(m: AssistantMessage): void {
    const model = `${m.provider ?? "unknown"}/${m.model ?? "unknown"}`;
    metrics.modelCalls.inc({ model, outcome: m.stopReason ?? "unknown" });
    const u = m.usage;
    if (u) {
      for (const [field, kind] of TOKEN_KINDS) if ((u[field] ?? 0) > 0) metrics.modelTokens.inc({ model, kind }, u[field]);
      if ((u.cost?.total ?? 0) > 0) metrics.modelCost.inc({ model }, u.cost!.total);
    }
    if (!this.model) return;
    endSpan(this.model, m.stopReason === "error" ? (m.errorMessage ?? "model call failed") : undefined, {
      "gen_ai.system": m.provider ?? "unknown",
      "gen_ai.request.model": m.model ?? "unknown",
      "gen_ai.usage.input_tokens": u?.input ?? 0,
      "gen_ai.usage.output_tokens": u?.output ?? 0,
      "mom.stop_reason": m.stopReason ?? "unknown",
    });
    this.model = undefined;
  }
}
