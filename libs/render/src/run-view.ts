import type { OutboundEvent, OutboundEventBody } from "@mom/contracts";

export type Ev<T extends OutboundEventBody["type"]> = Extract<OutboundEventBody, { type: T }>;

/** A finished tool call. */
export interface ToolStep {
  kind: "tool";
  label: string;
  toolName: string;
  args?: unknown;
  isError: boolean;
  resultText: string;
  durationMs: number;
}
export interface RetryStep {
  kind: "retry";
  attempt: number;
  maxAttempts: number;
  delayMs: number;
  error: string;
}
export interface CompactionFailedStep {
  kind: "compaction_failed";
  error: string;
}
export type Step = ToolStep | RetryStep | CompactionFailedStep;

/** What the run is doing right now. */
export type Activity =
  | { kind: "working" }
  /** `output`: the last line the running tool printed so far (its `tool_execution_update`s). */
  | { kind: "tool"; label: string; toolCallId?: string; output?: string }
  | { kind: "compacting" }
  /** `resumes`: what was shown before the approval prompt (the tool asking), shown again once it is decided. */
  | { kind: "awaiting_approval"; toolId: string; resumes: Activity };

/** Everything an adapter needs to draw one run, rebuilt from its outbound events alone. */
export interface RunView {
  runId: string;
  /** Seq of the last event folded in. */
  lastSeq: number;
  /** False when the first event seen was not `run_started` (the ingress started mid-run). */
  sawStart: boolean;
  trigger?: Ev<"run_started">["trigger"];
  /** Thread or message the run answers under. */
  replyTo?: string;
  activity: Activity;
  steps: Step[];
  /** Arguments of tool calls still running, by toolCallId. */
  runningArgs: Record<string, unknown>;
  files: Array<Ev<"attachment">>;
  /** Approval prompts not yet resolved, by approvalId. */
  pendingApprovals: Record<string, Ev<"approval_requested">>;
  /** The ended run; `receiptsUrl` is its run page on the web console, set by the Presenter when configured. */
  end?: Ev<"run_ended"> & { receiptsUrl?: string };
}

export function emptyRunView(runId: string, seq: number): RunView {
  return { runId, lastSeq: seq, sawStart: false, activity: { kind: "working" }, steps: [], runningArgs: {}, files: [], pendingApprovals: {} };
}

const WORKING: Activity = { kind: "working" };

/**
 * Folds one event of a run into its view (pure: returns a new view). Events that do not belong
 * to a run's drawing (`run_queued`, `run_rejected`, streamed deltas) leave it as it was.
 */
export function reduceRun(view: RunView | undefined, e: OutboundEvent): RunView {
  const v: RunView = { ...(view ?? emptyRunView(e.runId, e.seq)), lastSeq: Math.max(view?.lastSeq ?? e.seq, e.seq) };
  const ev = e.event;
  switch (ev.type) {
    case "run_started":
      return { ...v, sawStart: true, trigger: ev.trigger, ...(ev.replyTo && { replyTo: ev.replyTo }) };
    case "tool_execution_start":
      return { ...v, activity: { kind: "tool", label: ev.label, toolCallId: ev.toolCallId }, runningArgs: { ...v.runningArgs, [ev.toolCallId]: ev.args } };
    case "tool_execution_update": {
      const a = v.activity;
      const output = lastLine(ev.partialText);
      if (a.kind !== "tool" || a.toolCallId !== ev.toolCallId || !output || output === a.output) return v;
      return { ...v, activity: { ...a, output } };
    }
    case "tool_execution_end": {
      const { [ev.toolCallId]: args, ...runningArgs } = v.runningArgs;
      const step: ToolStep = { kind: "tool", label: ev.label, toolName: ev.toolName, ...(args !== undefined && { args }), isError: ev.isError, resultText: ev.resultText, durationMs: ev.durationMs };
      return { ...v, activity: WORKING, runningArgs, steps: [...v.steps, step] };
    }
    case "compaction_start":
      return { ...v, activity: { kind: "compacting" } };
    case "compaction_end":
      return { ...v, activity: WORKING, steps: ev.errorMessage ? [...v.steps, { kind: "compaction_failed", error: ev.errorMessage }] : v.steps };
    case "auto_retry_start":
      return { ...v, steps: [...v.steps, { kind: "retry", attempt: ev.attempt, maxAttempts: ev.maxAttempts, delayMs: ev.delayMs, error: ev.errorMessage }] };
    case "attachment":
      return { ...v, files: [...v.files, ev] };
    case "approval_requested":
      return {
        ...v,
        activity: { kind: "awaiting_approval", toolId: ev.toolId, resumes: v.activity.kind === "awaiting_approval" ? v.activity.resumes : v.activity },
        pendingApprovals: { ...v.pendingApprovals, [ev.approvalId]: ev },
      };
    case "approval_resolved": {
      const { [ev.approvalId]: _gone, ...pendingApprovals } = v.pendingApprovals;
      // The approved tool now runs: its `→ label` is shown again (a denial ends it right after).
      const a = v.activity;
      return { ...v, activity: a.kind === "awaiting_approval" && Object.keys(pendingApprovals).length === 0 ? a.resumes : a, pendingApprovals };
    }
    case "run_ended":
      return { ...v, activity: WORKING, end: ev, ...(ev.replyTo && !v.replyTo && { replyTo: ev.replyTo }) };
    default:
      return v;
  }
}

/** The last line with something on it (a progress bar's carriage returns count as line ends). */
function lastLine(text: string): string | undefined {
  const lines = text.split(/\r\n|\r|\n/);
  for (let i = lines.length - 1; i >= 0; i--) if (lines[i]!.trim()) return lines[i]!.trim();
  return undefined;
}

/** The tool steps of a view. */
export function toolSteps(view: RunView): ToolStep[] {
  return view.steps.filter((s): s is ToolStep => s.kind === "tool");
}
