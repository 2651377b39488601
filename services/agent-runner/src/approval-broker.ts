import type { ControlMessage } from "@mom/contracts";
import { randomUUID } from "node:crypto";

type Decision = Extract<ControlMessage, { type: "approval_decision" }>;

export interface PendingApproval {
  approvalId: string;
  channel: string;
  runId: string;
  toolCallId: string;
  risk: "read" | "write" | "destructive";
  toolId: string;
  argsHash: string;
  approvers: Set<string>;
}

export type ApprovalOutcome =
  | { approved: true; by: string }
  | { approved: false; by?: string; reason: string; /** Nobody decided in time (not a refusal). */ expired?: true };

export type DecideResult = { status: "resolved"; outcome: ApprovalOutcome } | { status: "refused"; pending: PendingApproval } | { status: "unknown" };

/**
 * Tool calls waiting for a person, by approval id. An approval is bound to one channel, tool id
 * and argument hash: a decision resolves exactly the call it was asked for. Only approvers may
 * decide; anyone else is refused (and the caller records it). No decision in time means deny.
 */
export class ApprovalBroker {
  private readonly pending = new Map<string, PendingApproval & { resolve: (o: ApprovalOutcome) => void; timer: NodeJS.Timeout }>();

  request(p: Omit<PendingApproval, "approvalId">, timeoutMs: number, signal?: AbortSignal): { approvalId: string; outcome: Promise<ApprovalOutcome> } {
    const approvalId = randomUUID();
    const outcome = new Promise<ApprovalOutcome>((resolve) => {
      const finish = (o: ApprovalOutcome) => {
        const entry = this.pending.get(approvalId);
        if (!entry) return;
        clearTimeout(entry.timer);
        this.pending.delete(approvalId);
        signal?.removeEventListener("abort", onAbort);
        resolve(o);
      };
      const onAbort = () => finish({ approved: false, reason: "the run was aborted" });
      const timer = setTimeout(() => finish({ approved: false, reason: `no decision within ${Math.round(timeoutMs / 1000)} s`, expired: true }), timeoutMs);
      timer.unref();
      this.pending.set(approvalId, { ...p, approvalId, resolve: finish, timer });
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
    });
    return { approvalId, outcome };
  }

  decide(channel: string, d: Decision): DecideResult {
    const entry = this.pending.get(d.approvalId);
    if (!entry || entry.channel !== channel) return { status: "unknown" };
    const by = d.decidedBy.username ? `@${d.decidedBy.username}` : d.decidedBy.id;
    if (!entry.approvers.has(d.decidedBy.id)) return { status: "refused", pending: entry };
    const outcome: ApprovalOutcome = d.decision === "allow-once" ? { approved: true, by } : { approved: false, by, reason: `denied by ${by}` };
    entry.resolve(outcome);
    return { status: "resolved", outcome };
  }
}
