// How `mom replay`, `mom tail` and the web console's channel page show bus traffic: one entry per
// stored message, as a readable line (or a few) or as one JSON object. The single place that
// decides these words (decoding is @mom/bus's channel-window).
import type { BusEntry } from "@mom/bus";
import type { ChannelMessage, ControlMessage, DeadLetter, OutboundEvent, Receipt } from "@mom/contracts";
import { visible } from "@mom/contracts";
import { formatDuration, formatUsage } from "@mom/format";
import { activityLines, approvalOutcomeLine, endNotes } from "./notes.js";
import { firstLine, plainDialect } from "./dialect.js";

const TEXT = plainDialect();
const short = (runId: string) => runId.slice(0, 8);
const indent = (text: string, pad: string) => text.replace(/\n/g, `\n${pad}`);

export interface ViewOptions {
  /** Prefix every line with the entry's channel (tail over several channels). */
  showChannel?: boolean;
}

/**
 * Readable lines for one entry: `12:00:01  tester: hi` … Streaming deltas and other structure-only
 * events give no line (undefined): the finished steps and the answer say it all.
 */
export function formatEntry(e: BusEntry, opts: ViewOptions = {}): string | undefined {
  const body = "invalid" in e ? `? ${e.stream} #${e.seq}: invalid payload (${e.invalid})` : describe(e);
  if (body === undefined) return undefined;
  const head = `${e.time.slice(11, 19)}  ${opts.showChannel && e.channel ? `${e.channel}  ` : ""}`;
  return `${head}${indent(body, " ".repeat(head.length))}`;
}

function describe(e: Exclude<BusEntry, { invalid: string }>): string | undefined {
  switch (e.kind) {
    case "in":
      return inbound(e.data as ChannelMessage);
    case "out":
      return outbound(e.data as OutboundEvent);
    case "ctl":
      return control(e.data as ControlMessage);
    case "receipts": {
      const r = e.data as Receipt;
      // What reached the person: the ingress's word that the platform took the answer (or not).
      if (r.type === "delivery.succeeded") return `  ✓ run ${short(r.runId)}'s answer delivered (${r.actor ?? "ingress"}: ${r.detail ?? "accepted"})`;
      if (r.type === "delivery.failed") return `  ✗ run ${short(r.runId)}'s answer NOT delivered (${r.actor ?? "ingress"}): ${firstLine(r.detail ?? "no reason given")}`;
      return `  · receipt ${r.type} ${r.toolId} [${r.risk}]${r.actor ? ` by ${r.actor}` : ""}${r.detail ? ` — ${firstLine(r.detail)}` : ""}`;
    }
    case "dlq": {
      const d = e.data as DeadLetter;
      return `✗ dead letter from ${d.stage} (${d.subject}${d.msgId ? `, msg-id ${d.msgId}` : ""}): ${firstLine(d.reason)}`;
    }
  }
}

function inbound(m: ChannelMessage): string {
  const files = m.attachments.map((a) => ` [📎 ${a.filename}]`).join("");
  const who = m.sender.isBot ? `${m.sender.username} (bot)` : m.sender.username;
  return `${who}${m.isMention ? " → mom" : ""}: ${m.text}${files}`;
}

function control(c: ControlMessage): string {
  if (c.type === "abort") return `■ stop requested${c.requestedBy ? ` by ${c.requestedBy.username ?? c.requestedBy.id}` : ""}${c.runId ? ` (run ${short(c.runId)})` : ""}`;
  return `${c.decision === "deny" ? "✗" : "✓"} ${c.decidedBy.username ?? c.decidedBy.id} ${c.decision === "deny" ? "denied" : "allowed once"} approval ${c.approvalId}`;
}

function outbound(o: OutboundEvent): string | undefined {
  const ev = o.event;
  const run = `run ${short(o.runId)}`;
  switch (ev.type) {
    case "run_queued":
      return `  ${run} queued for ${ev.trigger.username} (position ${ev.position})`;
    case "run_rejected":
      return `  ${run} refused (busy) for ${ev.trigger.username}: ${ev.text}`;
    case "run_started":
      return `  ${run} started for ${ev.trigger.username} (model ${ev.model}${ev.resumedFrom ? `, resumes run ${short(ev.resumedFrom)}` : ""})`;
    case "tool_execution_end":
      return `    ${ev.isError ? "✗" : "✓"} ${ev.label} (${formatDuration(ev.durationMs)})${ev.isError ? `: ${firstLine(ev.resultText)}` : ""}`;
    case "auto_retry_start":
      return `    ↻ provider error, retry ${ev.attempt}/${ev.maxAttempts}: ${firstLine(ev.errorMessage)}`;
    case "compaction_end":
      return `    ${ev.aborted || ev.errorMessage ? "✗" : "✓"} context compacted (${ev.reason})${ev.errorMessage ? `: ${firstLine(ev.errorMessage)}` : ""}`;
    case "approval_requested":
      return `    ⏸ approval ${ev.approvalId} asked: ${ev.toolId} [${ev.risk}] ${firstLine(visible(ev.argsSummary))} (for ${ev.requestedBy.username}; approvers ${ev.approvers.join(", ") || "none"})`;
    case "approval_resolved":
      return `    ${approvalOutcomeLine(ev, TEXT)} (approval ${ev.approvalId})`;
    case "attachment":
      return `    📎 ${ev.title ?? ev.filename} (${ev.filename}, ${ev.size} bytes)`;
    case "post":
      return `  📨 post ${short(o.runId)} from ${ev.from} for ${ev.requestedBy.username} (${ev.access === "operator" ? "the operator's terminal" : "membership checked by the ingress"}): ${indent(ev.text.trim(), "     ")}${ev.file ? ` [📎 ${ev.file.filename}]` : ""}`;
    case "auth.profile.rotated":
      return `    ↻ ${ev.provider} credential ${ev.from} refused (${ev.reason.replace("_", " ")}), continuing with ${ev.to}`;
    case "run_ended": {
      const lines: string[] = [];
      if (ev.silent) lines.push("mom: [SILENT] (nothing posted)");
      else if (ev.finalText.trim()) lines.push(`mom: ${indent(ev.finalText.trim(), "     ")}`);
      lines.push(...endNotes(ev, TEXT).map((n) => `    ${n}`));
      lines.push(...activityLines(ev.toolActivity, TEXT).map((a) => `    ${a}`));
      lines.push(`  ${run} ended (${ev.stopReason}): ${formatUsage(ev.usage, ev.durationMs)}`);
      return lines.join("\n");
    }
    default:
      return undefined; // deltas, message and turn boundaries, tool starts: structure only
  }
}

/** The JSON-lines form: the entry as it is (invalid payloads carry their raw text and the reason). */
export function entryJson(e: BusEntry): string {
  return JSON.stringify(e);
}
