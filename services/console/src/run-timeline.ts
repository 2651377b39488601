import type { BusEntry } from "@mom/bus";
import { type ChannelMessage, type ControlMessage, type OutboundEvent, type Receipt, type UsageRecord, visible } from "@mom/contracts";
import { formatDuration, formatUsage } from "@mom/format";
import { approvalOutcomeLine, plainDialect } from "@mom/render";

// One run of one channel as a timeline: what triggered it, each model turn, every tool call with
// its arguments and result, the receipts (in the order they were stored, with their ids), the
// approvals with who asked and who decided, retries and credential rotations, usage and the
// delivery of the answer. Built from the entries `readChannelWindow` returns (the same reading as
// `mom replay`) and the run's usage records.

export type StepKind = "trigger" | "start" | "model" | "tool" | "receipt" | "approval" | "decision" | "retry" | "rotation" | "compaction" | "attachment" | "usage" | "end" | "delivery";

export interface Step {
  time: string;
  kind: StepKind;
  title: string;
  /** Longer text shown as it is (escaped), e.g. arguments, a result, the answer. */
  body?: string;
  /** Ids shown with the step: receipt, tool call, parent run_code call, approval. */
  ids?: Array<[string, string]>;
  tone?: "ok" | "bad" | "wait";
}

export interface Timeline {
  runId: string;
  channel: string;
  found: boolean;
  model?: string;
  startedAt?: string;
  stopReason?: string;
  steps: Step[];
  receipts: Receipt[];
  costUsd: number;
}

const TEXT = plainDialect();
const json = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v, null, 2));

interface AssistantMessage {
  role: string;
  content?: Array<{ type: string; text?: string; name?: string; id?: string; arguments?: unknown; thinking?: string }>;
  usage?: { input?: number; output?: number; totalTokens?: number };
  stopReason?: string;
}

export function buildTimeline(channel: string, runId: string, entries: BusEntry[], usage: UsageRecord[]): Timeline {
  const steps: Step[] = [];
  const receipts: Receipt[] = [];
  const valid = entries.filter((e): e is Extract<BusEntry, { data: unknown }> => "data" in e);
  const started = valid.find((e) => e.kind === "out" && (e.data as OutboundEvent).runId === runId && (e.data as OutboundEvent).event.type === "run_started");
  const approvalIds = new Set<string>();
  let model: string | undefined;
  let stopReason: string | undefined;
  if (started) {
    const ev = (started.data as OutboundEvent).event as Extract<OutboundEvent["event"], { type: "run_started" }>;
    model = ev.model;
    const trigger = valid.find((e) => e.kind === "in" && (e.data as ChannelMessage).id === ev.trigger.messageId);
    if (trigger) {
      const m = trigger.data as ChannelMessage;
      steps.push({ time: trigger.time, kind: "trigger", title: `${m.sender.username}${m.sender.isBot ? " (bot)" : ""} wrote`, body: m.text, ids: [["message", m.id], ["MOM_IN", `#${trigger.seq}`]] });
    }
  }
  const toolStarts = new Map<string, unknown>();
  for (const e of valid) {
    if (e.kind === "out") {
      const o = e.data as OutboundEvent;
      if (o.runId !== runId) continue;
      const ev = o.event;
      switch (ev.type) {
        case "run_started":
          steps.push({ time: e.time, kind: "start", title: `run started for ${ev.trigger.username} on ${ev.model}${ev.resumedFrom ? ` (resumes run ${ev.resumedFrom})` : ""}` });
          break;
        case "message_end": {
          const msg = ev.message as AssistantMessage;
          if (msg.role !== "assistant") break;
          const text = (msg.content ?? []).filter((c) => c.type === "text").map((c) => c.text ?? "").join("\n").trim();
          const calls = (msg.content ?? []).filter((c) => c.type === "toolCall").map((c) => `→ ${c.name}(${json(c.arguments)})${c.id ? `  [call ${c.id}]` : ""}`);
          const tokens = msg.usage?.totalTokens !== undefined ? ` · ${msg.usage.totalTokens} tokens` : "";
          steps.push({ time: e.time, kind: "model", title: `model turn${calls.length ? `: ${calls.length} tool call${calls.length === 1 ? "" : "s"}` : ""}${tokens}`, body: [text, ...calls].filter(Boolean).join("\n") });
          break;
        }
        case "tool_execution_start":
          toolStarts.set(ev.toolCallId, ev.args);
          break;
        case "tool_execution_end":
          steps.push({
            time: e.time,
            kind: "tool",
            title: `${ev.isError ? "✗" : "✓"} ${ev.toolName}: ${ev.label} (${formatDuration(ev.durationMs)})`,
            body: `arguments: ${json(toolStarts.get(ev.toolCallId) ?? "(not recorded)")}\nresult: ${ev.resultText}`,
            ids: [["tool call", ev.toolCallId]],
            tone: ev.isError ? "bad" : "ok",
          });
          break;
        case "approval_requested":
          approvalIds.add(ev.approvalId);
          steps.push({
            time: e.time,
            kind: "approval",
            title: `approval asked: ${ev.toolId} [${ev.risk}] for ${ev.requestedBy.username}; approvers ${ev.approvers.join(", ") || "none"}; expires ${ev.expiresAt}`,
            body: visible(ev.argsSummary),
            ids: [["approval", ev.approvalId]],
            tone: "wait",
          });
          break;
        case "approval_resolved":
          steps.push({ time: e.time, kind: "approval", title: approvalOutcomeLine(ev, TEXT), ids: [["approval", ev.approvalId]], tone: ev.outcome === "approved" ? "ok" : "bad" });
          break;
        case "auto_retry_start":
          steps.push({ time: e.time, kind: "retry", title: `provider error, retry ${ev.attempt}/${ev.maxAttempts} in ${formatDuration(ev.delayMs)}`, body: ev.errorMessage, tone: "bad" });
          break;
        case "auth.profile.rotated":
          steps.push({ time: e.time, kind: "rotation", title: `${ev.provider} credential ${ev.from} refused (${ev.reason}); continuing with ${ev.to} (until ${ev.until})`, tone: "bad" });
          break;
        case "compaction_end":
          steps.push({ time: e.time, kind: "compaction", title: `context compacted (${ev.reason})${ev.errorMessage ? `: ${ev.errorMessage}` : ""}`, tone: ev.errorMessage || ev.aborted ? "bad" : "ok" });
          break;
        case "attachment":
          steps.push({ time: e.time, kind: "attachment", title: `shared ${ev.filename} (${ev.size} bytes)`, ids: [["object", ev.objectKey]] });
          break;
        case "run_ended":
          stopReason = ev.stopReason;
          steps.push({
            time: e.time,
            kind: "end",
            title: `run ended (${ev.stopReason})${ev.errorMessage ? `: ${ev.errorMessage}` : ""} · ${formatUsage(ev.usage, ev.durationMs)}`,
            body: ev.silent ? "[SILENT] (nothing posted)" : ev.finalText,
            tone: ev.stopReason === "error" || ev.stopReason === "aborted" ? "bad" : "ok",
          });
          break;
        default:
          break;
      }
    } else if (e.kind === "receipts") {
      const r = e.data as Receipt;
      if (r.runId !== runId) continue;
      receipts.push(r);
      const ids: Array<[string, string]> = [["receipt", r.receiptId]];
      if (r.toolCallId) ids.push(["tool call", r.toolCallId]);
      if (r.parentToolCallId) ids.push(["in run_code", r.parentToolCallId]);
      const delivery = r.type === "delivery.succeeded" || r.type === "delivery.failed";
      steps.push({
        time: e.time,
        kind: delivery ? "delivery" : "receipt",
        title: delivery
          ? `${r.type === "delivery.succeeded" ? "answer delivered" : "answer NOT delivered"} (${r.actor ?? "ingress"})`
          : `${r.type} ${r.toolId} [${r.risk}]${r.actor ? ` by ${r.actor}` : ""}`,
        ...(r.detail && { body: r.detail }),
        ids,
        tone: /failed|denied|refused/.test(r.type) ? "bad" : /succeeded|approved/.test(r.type) ? "ok" : undefined,
      });
    } else if (e.kind === "ctl") {
      const c = e.data as ControlMessage;
      if (c.type === "approval_decision" && approvalIds.has(c.approvalId)) {
        steps.push({ time: e.time, kind: "decision", title: `${c.decidedBy.username ?? c.decidedBy.id} (${c.decidedBy.id}) chose ${c.decision} at ${c.ts}`, ids: [["approval", c.approvalId]] });
      } else if (c.type === "abort" && (!c.runId || c.runId === runId) && started && e.time >= started.time && (!stopReason)) {
        steps.push({ time: e.time, kind: "decision", title: `stop requested${c.requestedBy ? ` by ${c.requestedBy.username ?? c.requestedBy.id}` : ""}`, tone: "bad" });
      }
    }
  }
  const mine = usage.filter((u) => u.runId === runId).sort((a, b) => a.ts.localeCompare(b.ts));
  // Usage records are stored by another stream: each goes where it happened, the rest keep their stored order.
  const ordered: Step[] = [];
  let u = 0;
  for (const step of steps) {
    while (u < mine.length && mine[u]!.ts <= step.time) ordered.push(usageStep(mine[u++]!));
    ordered.push(step);
  }
  while (u < mine.length) ordered.push(usageStep(mine[u++]!));
  return {
    runId,
    channel,
    found: started !== undefined,
    ...(model && { model }),
    ...(started && { startedAt: started.time }),
    ...(stopReason && { stopReason }),
    steps: ordered,
    receipts,
    costUsd: mine.reduce((a, u) => a + u.costUsd, 0),
  };
}

function usageStep(u: UsageRecord): Step {
  return {
    time: u.ts,
    kind: "usage",
    title: `model call ${u.provider}/${u.model}${u.credential ? ` (credential ${u.credential})` : ""}: ${u.input} in, ${u.output} out, ${u.cacheRead} cache read · $${u.costUsd.toFixed(4)}`,
    ids: [["usage", u.id]],
  };
}
