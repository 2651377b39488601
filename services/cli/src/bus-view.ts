// How `mom replay` and `mom tail` show bus traffic: one entry per stored message, as a readable
// line (or a few) or as one JSON object. The single place that decides these words.
import type { RawMessage } from "@mom/bus";
import {
  type ChannelMessage,
  ChannelMessage as ChannelMessageSchema,
  type ChannelSubjectKind,
  type ControlMessage,
  ControlMessage as ControlMessageSchema,
  type DeadLetter,
  DeadLetter as DeadLetterSchema,
  type OutboundEvent,
  OutboundEvent as OutboundEventSchema,
  parsePayload,
  qualifiedChannelId,
  type Receipt,
  Receipt as ReceiptSchema,
  type Subjects,
  type Validator,
  validator,
  visible,
} from "@mom/contracts";
import type { TSchema } from "typebox";
import { formatDuration, formatUsage } from "@mom/format";
import { activityLines, approvalOutcomeLine, endNotes, firstLine, plainDialect } from "@mom/render";

export type EntryKind = ChannelSubjectKind | "dlq";

/** One stored message, decoded and checked against its contract. */
export type BusEntry = {
  kind: EntryKind;
  stream: string;
  seq: number;
  /** When JetStream stored it (ISO). */
  time: string;
  subject: string;
  /** `<adapter>/<channel>`; absent for dead letters. */
  channel?: string;
  msgId?: string;
} & (
  | { kind: "in"; data: ChannelMessage }
  | { kind: "out"; data: OutboundEvent }
  | { kind: "ctl"; data: ControlMessage }
  | { kind: "receipts"; data: Receipt }
  | { kind: "dlq"; data: DeadLetter }
  | { kind: EntryKind; invalid: string; text: string }
);

const validators = {
  in: validator(ChannelMessageSchema),
  out: validator(OutboundEventSchema),
  ctl: validator(ControlMessageSchema),
  receipts: validator(ReceiptSchema),
  dlq: validator(DeadLetterSchema),
};

/** Decodes a raw message; a payload that breaks its contract is kept and shown as invalid. */
export function toEntry(m: RawMessage, subjects: Subjects): BusEntry {
  const ref = subjects.parse(m.subject);
  const kind: EntryKind = ref?.kind ?? "dlq";
  const base = { kind, stream: m.stream, seq: m.seq, time: m.time.toISOString(), subject: m.subject, ...(ref && { channel: qualifiedChannelId(ref) }), ...(m.msgId && { msgId: m.msgId }) };
  const parsed = parsePayload(validators[kind] as Validator<TSchema>, m.text);
  return (parsed.ok ? { ...base, data: parsed.value } : { ...base, invalid: parsed.reason, text: m.text }) as BusEntry;
}

/** Interleaves entries read from several streams by the time they were stored (stable per stream). */
export function interleave(lists: BusEntry[][]): BusEntry[] {
  return lists
    .flat()
    .map((e, i) => ({ e, i }))
    .sort((a, b) => a.e.time.localeCompare(b.e.time) || a.i - b.i)
    .map(({ e }) => e);
}

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
