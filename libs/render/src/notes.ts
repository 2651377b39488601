// The words every adapter shows, decided once; each platform only supplies its Dialect.
import { type ToolActivity, type Usage, visible } from "@mom/contracts";
import { formatDuration, formatUsage } from "@mom/format";
import { clip, type Dialect, fenceSafe, firstLine } from "./dialect.js";
import type { Activity, Ev, RunView, Step } from "./run-view.js";

/** What the run does now: `working…`, `→ Read the notes`, … (plain text). */
/** How much of a running tool's latest output line a progress message shows. */
const OUTPUT_LINE_MAX = 100;

/**
 * What the run is doing, in words. A running tool's latest output line follows on a line of its
 * own (`oneLine`: after " · ", for a terminal's status line); it is the command's, so what it
 * could hide (escape sequences, bidi overrides, zero-width characters) is shown, as on approval cards.
 */
export function statusText(a: Activity, o: { oneLine?: boolean } = {}): string {
  switch (a.kind) {
    case "working":
      return "working…";
    case "tool":
      return a.output ? `→ ${clip(a.label, 120)}${o.oneLine ? " · " : "\n   "}${clip(visible(a.output, { newlines: false }), OUTPUT_LINE_MAX)}` : `→ ${clip(a.label, 120)}`;
    case "compacting":
      return "compacting context…";
    case "awaiting_approval":
      return `⏸ waiting for approval to run ${a.toolId}`;
  }
}

/** One line per finished step: `✓ List files (12 ms)`, `✗ Build (3.1 s): exit 2`, the retry line. */
export function stepLine(s: Step, d: Dialect): string {
  const m = d.marks;
  switch (s.kind) {
    case "tool":
      return `${s.isError ? m.failed : m.ok} ${d.escape(clip(s.label, 120))} (${formatDuration(s.durationMs)})${s.isError ? `: ${d.escape(clip(firstLine(s.resultText), 120))}` : ""}`;
    case "retry":
      return `${m.retry} provider error, retry ${s.attempt}/${s.maxAttempts} in ${Math.round(s.delayMs / 1000)}s: ${d.escape(firstLine(s.error))}`;
    case "compaction_failed":
      return `${m.failed} compaction failed: ${d.escape(firstLine(s.error))}`;
  }
}

/**
 * A finished step as one detail of a run's details thread: a tool call's label, tool and
 * duration, its arguments and the start of its result in code blocks; another step its line.
 */
export function detailText(s: Step, d: Dialect): string {
  if (s.kind !== "tool") return stepLine(s, d);
  const parts = [`${s.isError ? d.marks.failed : d.marks.ok} ${d.bold(d.escape(clip(s.label, 200)))} · ${d.code(s.toolName)} · ${formatDuration(s.durationMs)}`];
  const args = describeArgs(s.args);
  if (args) parts.push(d.codeBlock(clip(args, 400)));
  if (s.resultText.trim()) parts.push(d.codeBlock(clip(s.resultText.trimEnd(), 900)));
  return parts.join("\n");
}

/** Why a run ended other than normally; empty when it just finished. */
export function endNotes(end: Ev<"run_ended">, d: Dialect): string[] {
  const m = d.marks;
  const why = end.errorMessage ? d.escape(end.errorMessage) : undefined;
  if (end.stopReason === "aborted") return [`${m.stopped} ${d.italic(`Stopped${why ? `: ${why}` : "."}`)}`];
  if (end.stopReason === "error") return [`${m.failed} ${d.bold("Error:")} ${why ?? "unknown error"}`];
  if (end.stopReason === "length") return [`${m.warning} ${d.italic("The answer was cut off at the model's output limit.")}`];
  return [];
}

/**
 * What the receipts say the run did, whatever the answer claims: every call but successful reads,
 * one line each.
 */
export function activityLines(activity: ToolActivity[] | undefined, d: Dialect, receiptsUrl?: string): string[] {
  const mark = { succeeded: d.marks.ok, failed: d.marks.failed, denied: d.marks.denied, pending: d.marks.pending } as const;
  const lines = (activity ?? [])
    .filter((a) => a.status !== "succeeded" || a.risk !== "read")
    .map((a) => {
      const label = a.label ? ` — ${d.escape(clip(a.label, 120))}` : "";
      const detail = a.detail ? ` (${d.escape(firstLine(a.detail))})` : "";
      return `${mark[a.status]} ${d.code(a.toolId)}${label}: ${a.status}${detail}`;
    });
  // Any tool call at all (reads included) has receipts worth a look: the run page lists them all.
  if (receiptsUrl && activity?.length) lines.push(d.fromMarkdown(`[Receipts and timeline](${receiptsUrl})`));
  return lines;
}

/** `📊 4,955 in · 64 out · $0.0158 · context 3k/200k (1.3%) · 2.1s` */
export function usageLine(u: Usage, durationMs: number, d: Dialect): string {
  return `${d.marks.usage} ${formatUsage(u, durationMs)}`;
}

/** The answer of an ended run in the dialect, with its end notes; "" when there is nothing to say. */
export function answerText(end: Ev<"run_ended">, d: Dialect, extra: string[] = []): string {
  const answer = end.finalText.trim() ? d.fromMarkdown(end.finalText.trim()) : "";
  return [answer, ...endNotes(end, d), ...extra].filter((s) => s.trim()).join("\n\n");
}

/** The notice a queued message gets (posted, or edited to its new position when queued again). */
export function queuedText(ev: Ev<"run_queued">, d: Dialect): string {
  return `${d.marks.working} Queued: I'll get to this after the current request (position ${ev.position}).`;
}

/** Who may decide an approval, as the prompt and the refusal name them. */
export function approversText(approvers: string[], d: Dialect, none = "nobody is configured (adapters.<name>.admins)"): string {
  return approvers.length ? approvers.map((id) => d.mention(id)).join(", ") : none;
}

/** Room kept in a prompt for the outcome line added when the approval ends. */
const OUTCOME_ROOM = 80;

/** The pieces of an approval prompt, in the dialect: `args` is the arguments' text, not yet in its block. */
export interface ApprovalPromptParts {
  head: string;
  args: string;
  foot: string;
}

/**
 * The approval prompt, decided here for every adapter: what mom wants to run, the arguments as
 * the runner wrote them (target first, invisible characters spelled out by `visible`, applied
 * again here so a summary that did not come from the runner cannot hide anything either) in a
 * code block where nothing is markup, who may decide and until when. The arguments are never
 * clipped: the runner refuses to ask about a summary longer than the adapter shows
 * (APPROVAL_TEXT_LIMITS); to fit the prompt limit the approvers' list is shortened instead.
 * `deadline` is how the platform writes the expiry (`by 10:05 UTC`).
 */
export function approvalPromptParts(ev: Ev<"approval_requested">, d: Dialect, deadline?: (expiresAt: string) => string): ApprovalPromptParts {
  const when = Number.isFinite(Date.parse(ev.expiresAt)) ? ` · no decision ${(deadline ?? defaultDeadline)(ev.expiresAt)} means deny` : "";
  const oneLine = (s: string, n: number) => visible(clip(s, n), { newlines: false });
  const head = `${d.marks.approval} ${d.bold("Approval needed")}: mom wants to run ${d.code(oneLine(ev.toolId, 64))} (${ev.risk}), asked by ${d.fromMarkdown(`@${oneLine(ev.requestedBy.username, 40)}`)}`;
  const args = visible(ev.argsSummary);
  const limit = (d.promptLimit ?? d.limit) - OUTCOME_ROOM;
  const fixed = head.length + d.codeBlock(args).length + 2;
  const foot = (who: string) => `Who can decide: ${who}${when}`;
  const some = (shown: number) => {
    const rest = ev.approvers.length - shown;
    return foot(`${shown ? `${ev.approvers.slice(0, shown).map((id) => d.mention(id)).join(", ")} and ` : ""}${rest} other${rest === 1 ? "" : "s"}`);
  };
  let text = foot(approversText(ev.approvers, d));
  // Named approvers are dropped from the end only when that makes the prompt fit.
  if (fixed + text.length > limit && ev.approvers.length && fixed + some(0).length <= limit) {
    let shown = ev.approvers.length - 1;
    while (shown > 0 && fixed + some(shown).length > limit) shown--;
    text = some(shown);
  }
  return { head, args, foot: text };
}

/** The prompt of an approval as one message (see `approvalPromptParts`). */
export function approvalPromptText(ev: Ev<"approval_requested">, d: Dialect, deadline?: (expiresAt: string) => string): string {
  const p = approvalPromptParts(ev, d, deadline);
  return [p.head, d.codeBlock(p.args), p.foot].join("\n");
}

const defaultDeadline = (iso: string) => `by ${iso.slice(11, 16)} UTC`;

/** The line added to a prompt when its approval ends. */
export function approvalOutcomeLine(ev: Ev<"approval_resolved">, d: Dialect): string {
  const by = ev.decidedBy ? ` by ${d.fromMarkdown(ev.decidedBy)}` : "";
  if (ev.outcome === "approved") return `${d.marks.ok} Allowed once${by}.`;
  if (ev.outcome === "denied") return `${d.marks.denied} Denied${by}.`;
  return `${d.marks.expired} No decision in time: denied.`;
}

/** What someone who may not decide an approval is told (only them, where the platform allows). */
export function notApproverText(approvers: string[], d: Dialect): string {
  return `Only ${approversText(approvers, d, "nobody (adapters.<name>.admins is empty)")} can decide this.`;
}

/** A tool call's arguments, short: a single string argument as is, others as JSON without the label. */
export function describeArgs(args: unknown): string {
  if (args === null || typeof args !== "object") return args === undefined ? "" : JSON.stringify(args);
  const { label: _label, ...rest } = args as Record<string, unknown>;
  const keys = Object.keys(rest);
  if (keys.length === 1 && typeof rest[keys[0]!] === "string") return rest[keys[0]!] as string;
  return keys.length ? JSON.stringify(rest) : "";
}

/** Text for a fenced block, clipped; no fence inside can close it. */
export function fenced(text: string, max: number): string {
  return fenceSafe(clip(text.trimEnd(), max));
}

const MAX_STEPS_SHOWN = 12;

/** A progress message: `⏳ Working…`, the last finished steps that fit, and what runs now. */
export function progressText(view: RunView, d: Dialect): string {
  const head = `${d.marks.working} Working…`;
  const now = view.activity.kind !== "working" ? [d.escape(statusText(view.activity))] : [];
  let steps = view.steps.slice(-MAX_STEPS_SHOWN).map((s) => stepLine(s, d));
  const text = () => {
    const hidden = view.steps.length - steps.length;
    return [head, ...(hidden > 0 ? [`… ${hidden} earlier step${hidden === 1 ? "" : "s"}`] : []), ...steps, ...now].join("\n");
  };
  while (steps.length && text().length > d.limit) steps = steps.slice(1);
  return clip(text(), d.limit);
}

/** A run's page on the web console at `base` (console.publicUrl), as its routes spell it (docs/console.md). */
export function consoleRunUrl(base: string, adapter: string, channelId: string, runId: string): string {
  const enc = encodeURIComponent;
  return `${base.replace(/\/+$/, "")}/channels/${enc(adapter)}/${enc(channelId)}/runs/${enc(runId)}`;
}
