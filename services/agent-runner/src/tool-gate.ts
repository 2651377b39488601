import type { Bus } from "@mom/bus";
import type { ChannelRef, Receipt, ReceiptType } from "@mom/contracts";
import type { ChannelStore } from "@mom/store";
import { approvalText, argsHash, DEFAULT_TOOL_TIMEOUT_MS, decide, type GateCall, makeReceipt, type PolicyLayers, type ToolGate } from "@mom/tools";
import { metrics } from "@mom/observability";
import type { Logger } from "pino";
import type { ApprovalBroker, PendingApproval } from "./approval-broker.js";
import type { ActiveRun, RunInProgress } from "./active-run.js";

export const BUILTIN_TOOL_IDS = new Set(["bash", "read", "write", "edit", "apply_patch", "attach", "run_code", "web_fetch", "spawn", "process", "send"]);

type GateRun = RunInProgress;

export interface ChannelToolGateDeps {
  bus: Bus;
  ref: ChannelRef;
  channel: string;
  store: ChannelStore;
  broker: ApprovalBroker;
  policy: () => PolicyLayers;
  /** Who may decide: the adapter's admins, plus the requester when allowed. */
  approvers: (requesterId: string) => string[];
  approvalTimeoutMs: number;
  /** The longest argument summary the channel's adapter shows whole (`approvalTextLimit` of its type). */
  approvalTextLimit?: number;
  /** The channel's run in progress. */
  active: ActiveRun;
  log: Logger;
}

/**
 * Every tool call of one channel passes here: receipt `requested`; the policy decides allow, ask
 * or deny; `ask` publishes `approval_requested` and waits for a decision (timeout = deny); then
 * `started`, the call itself under its timeout and the run's abort signal, and `succeeded` or
 * `failed`. Receipts go to receipts.jsonl and `mom.receipts.<adapter>.<channel>`.
 */
export class ChannelToolGate implements ToolGate {
  constructor(private readonly deps: ChannelToolGateDeps) {}

  async run<T>(call: GateCall, signal: AbortSignal | undefined, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const run = this.deps.active.current;
    const rc = { runId: run?.runId ?? "none", toolCallId: call.toolCallId, toolId: call.toolId, risk: call.risk, args: call.args, parentToolCallId: call.parentToolCallId };
    const receipt = (type: ReceiptType, extra?: { detail?: string; actor?: string }) => this.record(run, makeReceipt(type, rc, extra));

    await receipt("tool.call.requested");
    const { decision, reason } = decide(call.toolId, call.risk, !BUILTIN_TOOL_IDS.has(call.toolId), this.deps.policy());
    if (decision === "deny") {
      await receipt("tool.call.denied", { detail: reason });
      throw new Error(`${call.toolId} was not run: ${reason}. Tell the user it is not allowed here.`);
    }
    if (decision === "ask") {
      if (!run) {
        await receipt("tool.call.denied", { detail: "approval needed but no run to ask in" });
        throw new Error(`${call.toolId} needs approval, but there is nobody to ask`);
      }
      const shown = approvalText(call.toolId, call.args, this.deps.approvalTextLimit);
      if (!shown.ok) {
        await receipt("tool.call.denied", { detail: shown.reason });
        throw new Error(`${call.toolId} was not run: ${shown.reason}.`);
      }
      const requester = run.message.sender;
      const approvers = this.deps.approvers(requester.id);
      const askedHash = argsHash(call.args);
      const { approvalId, outcome } = this.deps.broker.request(
        { channel: this.deps.channel, runId: rc.runId, toolCallId: call.toolCallId, risk: call.risk, toolId: call.toolId, argsHash: askedHash, approvers: new Set(approvers) },
        this.deps.approvalTimeoutMs,
        signal,
      );
      run.publisher.emit({
        type: "approval_requested",
        approvalId,
        toolId: call.toolId,
        risk: call.risk,
        argsSummary: shown.text,
        requestedBy: { id: requester.id, username: requester.username },
        expiresAt: new Date(Date.now() + this.deps.approvalTimeoutMs).toISOString(),
        approvers,
        ...(run.message.replyTo !== undefined && { replyTo: run.message.replyTo }),
      });
      const result = await outcome;
      if (!result.approved) {
        // Stopping the run denies what it waited for, in the name of whoever stopped it.
        const by = result.by ?? (result.expired ? undefined : run.cancelledBy);
        metrics.approvals.inc({ outcome: result.expired ? "expired" : "denied" });
        run.publisher.emit({ type: "approval_resolved", approvalId, outcome: result.expired ? "expired" : "denied", ...(by && { decidedBy: by }) });
        await receipt("tool.call.denied", { detail: result.reason, ...(by && { actor: by }) });
        throw new Error(`${call.toolId} was not run: ${result.reason}.`);
      }
      // What the approver saw is what runs: arguments that changed while waiting are not approved.
      if (argsHash(call.args) !== askedHash) {
        metrics.approvals.inc({ outcome: "denied" });
        run.publisher.emit({ type: "approval_resolved", approvalId, outcome: "denied", decidedBy: result.by });
        await receipt("tool.call.denied", { detail: "the arguments changed after approval was asked" });
        throw new Error(`${call.toolId} was not run: its arguments changed after approval was asked.`);
      }
      metrics.approvals.inc({ outcome: "approved" });
      run.publisher.emit({ type: "approval_resolved", approvalId, outcome: "approved", decidedBy: result.by });
      await receipt("tool.call.approved", { actor: result.by });
    }
    await receipt("tool.call.started");
    const timeoutMs = call.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      // A stop may land while the receipts above are written (approved, started): then the tool is
      // not called at all — one that ignores an aborted signal (a host tool, a background job's
      // start) would otherwise still act after the run was stopped.
      const value = await raceAbort(() => fn(combined), combined, () => (timeout.aborted ? `timed out after ${Math.round(timeoutMs / 1000)} s` : "aborted"));
      await receipt("tool.call.succeeded");
      return value;
    } catch (err) {
      await receipt("tool.call.failed", { detail: firstLine((err as Error)?.message ?? String(err)) });
      throw err;
    }
  }

  /** A decision from someone who may not decide: recorded, and the call keeps waiting. */
  async refused(p: PendingApproval, actor: string): Promise<void> {
    const receipt: Receipt = {
      ...makeReceipt("approval.refused", { runId: p.runId, toolCallId: p.toolCallId, toolId: p.toolId, risk: p.risk, args: {} }, { actor, detail: `${actor} may not decide this approval` }),
      argsHash: p.argsHash,
    };
    await this.record(this.deps.active.current, receipt);
  }

  /**
   * A call pi refused because the tool is hidden from this channel (or from a sub-agent, whose
   * spawn call is `parentToolCallId`): receipts say it was denied.
   */
  async hidden(toolCallId: string, toolId: string, of: { parentToolCallId?: string; detail?: string } = {}): Promise<void> {
    const run = this.deps.active.current;
    if (!run || run.receipts.some((r) => r.toolCallId === toolCallId)) return;
    const rc = { runId: run.runId, toolCallId, toolId, risk: "destructive" as const, args: {}, parentToolCallId: of.parentToolCallId };
    const receipts = [makeReceipt("tool.call.requested", rc), makeReceipt("tool.call.denied", rc, { detail: of.detail ?? "not available in this channel (hidden by policy, or no such tool)" })];
    // Both count for the run at once: it may well end before they are written.
    run.receipts.push(...receipts);
    for (const r of receipts) await this.persist(r);
  }

  private async record(run: GateRun | undefined, receipt: Receipt): Promise<void> {
    run?.receipts.push(receipt);
    await this.persist(receipt);
  }

  private async persist(receipt: Receipt): Promise<void> {
    try {
      await this.deps.store.appendReceipt(receipt);
      await this.deps.bus.publish(this.deps.bus.subjects.channel("receipts", this.deps.ref), receipt, receipt.receiptId);
    } catch (err) {
      this.deps.log.error({ err, receipt }, "could not record receipt");
    }
  }
}

// First and last line of an error: bash puts the output first and "exited with code N" last.
function firstLine(text: string): string {
  const lines = text.trim().split("\n").filter((l) => l.trim());
  const line = lines.length > 1 ? `${lines[0]} … ${lines.at(-1)}` : (lines[0] ?? "");
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

/**
 * Calls `start` unless `signal` has already aborted, then resolves or rejects with its promise, or
 * rejects as soon as `signal` aborts (tools that ignore it).
 */
function raceAbort<T>(start: () => Promise<T>, signal: AbortSignal, why: () => string): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error(why()));
  const p = start();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error(why()));
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => (signal.removeEventListener("abort", onAbort), resolve(v)),
      (e) => (signal.removeEventListener("abort", onAbort), reject(e)),
    );
  });
}
