import type { Receipt, ReceiptType, ToolActivity } from "@mom/contracts";
import { createHash, randomUUID } from "node:crypto";
import type { Risk } from "./tool-contract.js";

/** JSON with object keys sorted, so equal arguments always hash the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

export function argsHash(args: unknown): string {
  return createHash("sha256").update(canonicalJson(args)).digest("hex");
}

export interface ReceiptCall {
  runId: string;
  toolCallId: string;
  toolId: string;
  risk: Risk;
  args: unknown;
  /** Set for a call a run_code script or a sub-agent made: the run_code or spawn call's id. */
  parentToolCallId?: string;
}

export function makeReceipt(type: ReceiptType, call: ReceiptCall, extra: { detail?: string; actor?: string } = {}): Receipt {
  return {
    receiptId: randomUUID(),
    type,
    runId: call.runId,
    toolCallId: call.toolCallId,
    toolId: call.toolId,
    risk: call.risk,
    ts: new Date().toISOString(),
    argsHash: argsHash(call.args),
    ...(extra.detail !== undefined && { detail: extra.detail }),
    ...(extra.actor !== undefined && { actor: extra.actor }),
    ...(call.parentToolCallId !== undefined && { parentToolCallId: call.parentToolCallId }),
  };
}

const TERMINAL: Partial<Record<ReceiptType, ToolActivity["status"]>> = {
  "tool.call.succeeded": "succeeded",
  "tool.call.failed": "failed",
  "tool.call.denied": "denied",
};

/** How many successful reads a summary keeps; the rest are counted, not listed. */
export const KEY_READS = 5;

/**
 * The tool activity worth showing under an answer, from one run's receipts in order: every call
 * that failed, was denied or is still pending; every write and destructive call; the first few
 * successful reads. This is what the answer may claim — nothing without a succeeded receipt.
 */
export function relevantActivity(receipts: Receipt[], labels: Map<string, string> = new Map()): ToolActivity[] {
  const calls = new Map<string, ToolActivity>();
  for (const r of receipts) {
    if (r.type === "approval.refused") continue;
    const current = calls.get(r.toolCallId) ?? { toolCallId: r.toolCallId, toolId: r.toolId, risk: r.risk, status: "pending" as const };
    const status = TERMINAL[r.type];
    calls.set(r.toolCallId, {
      ...current,
      ...(status && { status }),
      ...(status && r.detail !== undefined && { detail: r.detail }),
      ...(labels.has(r.toolCallId) && { label: labels.get(r.toolCallId)! }),
    });
  }
  let reads = 0;
  return [...calls.values()].filter((a) => {
    if (a.status !== "succeeded" || a.risk !== "read") return true;
    return ++reads <= KEY_READS;
  });
}

/** One line per call, for the model and for plain-text adapters. */
export function formatActivity(activity: ToolActivity[]): string {
  if (activity.length === 0) return "(no tool calls)";
  const mark = { succeeded: "✓", failed: "✗", denied: "⊘", pending: "…" } as const;
  return activity
    .map((a) => `${mark[a.status]} ${a.toolId}${a.label ? ` — ${a.label}` : ""} [${a.risk}, ${a.status}]${a.detail ? `: ${a.detail}` : ""}`)
    .join("\n");
}
