// The mrkdwn pieces the renderer posts: progress line, tool details, usage, errors.
import type { OutboundEvent, ToolActivity, Usage } from "@mom/contracts";
import { escapeMrkdwn, formatDuration, formatUsage } from "@mom/format";

type Ev<T extends string> = Extract<OutboundEvent["event"], { type: T }>;

export const WORKING = "working…";

/** The main message while a run goes on: `⏳ working…` / `⏳ → Read the notes`. */
export function progressText(status: string): string {
  return `:hourglass_flowing_sand: ${escapeMrkdwn(status)}`;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Text for a ``` block: no fence can close it early. */
function codeBlock(text: string, max: number): string {
  const body = escapeMrkdwn(clip(text.trimEnd(), max)).replace(/```/g, "``\u200b`");
  return "```\n" + (body || " ") + "\n```";
}

/** What the tool was called with, short: bash's command as is, other args as JSON without the label. */
export function describeArgs(args: unknown): string {
  if (args === null || typeof args !== "object") return args === undefined ? "" : JSON.stringify(args);
  const { label: _label, ...rest } = args as Record<string, unknown>;
  const keys = Object.keys(rest);
  if (keys.length === 1 && typeof rest[keys[0]!] === "string") return rest[keys[0]!] as string;
  return keys.length ? JSON.stringify(rest) : "";
}

/** One finished tool call in the thread: ✓/✗, label, tool, duration, arguments and result. */
export function toolDetail(end: Ev<"tool_execution_end">, args: unknown): string {
  const mark = end.isError ? ":x:" : ":white_check_mark:";
  const head = `${mark} *${escapeMrkdwn(clip(end.label, 200))}* · \`${escapeMrkdwn(end.toolName)}\` · ${formatDuration(end.durationMs)}`;
  const parts = [head];
  const described = describeArgs(args);
  if (described) parts.push(codeBlock(described, 400));
  if (end.resultText.trim()) parts.push(codeBlock(end.resultText, 900));
  return parts.join("\n");
}


/** `:bar_chart: 4,955 in · 64 out · $0.0158 · context 3k/200k (1.3%) · 2.1s` */
export function usageLine(u: Usage, durationMs: number): string {
  return `:bar_chart: ${formatUsage(u, durationMs)}`;
}

/** The final answer (already mrkdwn) plus what went wrong, if anything. */
export function finalBody(answer: string, ev: Ev<"run_ended">): string {
  const notes: string[] = [];
  if (ev.stopReason === "error") notes.push(`:x: *Error:* ${escapeMrkdwn(ev.errorMessage ?? "unknown error")}`);
  else if (ev.stopReason === "aborted") notes.push(`:black_square_for_stop: _Stopped${ev.errorMessage ? `: ${escapeMrkdwn(ev.errorMessage)}` : ""}_`);
  else if (ev.stopReason === "length") notes.push(":warning: _The answer was cut off at the model's output limit._");
  const body = [answer, ...notes, activityText(ev.toolActivity ?? [])].filter((s) => s.trim()).join("\n\n");
  return body || "_Done._";
}

const ACTIVITY_MARK = { succeeded: ":white_check_mark:", failed: ":x:", denied: ":no_entry_sign:", pending: ":hourglass:" } as const;

/**
 * What the receipts say the run did (whatever the answer claims), shown under the answer:
 * everything but successful reads.
 */
export function activityText(activity: ToolActivity[]): string {
  return activity
    .filter((a) => a.status !== "succeeded" || a.risk !== "read")
    .map((a) => {
      const label = a.label ? ` — ${escapeMrkdwn(clip(a.label, 120))}` : "";
      const detail = a.detail ? ` (${escapeMrkdwn(clip(a.detail.trim().split("\n")[0] ?? "", 200))})` : "";
      return `${ACTIVITY_MARK[a.status]} \`${escapeMrkdwn(a.toolId)}\`${label}: ${a.status}${detail}`;
    })
    .join("\n");
}
