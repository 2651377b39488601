/**
 * Longest command an approver is asked about. Every adapter shows at least this much of
 * `argsSummary` unclipped (Discord clips at 1200 characters, Slack at 1500), so a person never
 * approves a command whose end they could not see.
 */
export const MAX_APPROVAL_TEXT = 1000;

export type ApprovalText = { ok: true; text: string } | { ok: false; reason: string };

/**
 * What an approver is shown for a call. bash: the exact command line that will run, verbatim
 * (not JSON, whose escapes hide newlines), or a refusal when it is too long to show whole; other
 * tools: their arguments as JSON, shortened.
 */
export function approvalText(toolId: string, args: unknown): ApprovalText {
  const a = (args ?? {}) as Record<string, unknown>;
  if (toolId === "bash" && typeof a.command === "string") {
    const timeout = typeof a.timeout === "number" ? ` (timeout ${a.timeout} s)` : "";
    const text = `${a.command}${timeout}`;
    if (text.length > MAX_APPROVAL_TEXT) {
      return { ok: false, reason: `the command is ${text.length} characters, too long to show an approver in full (at most ${MAX_APPROVAL_TEXT}); split it into shorter commands` };
    }
    return { ok: true, text };
  }
  const json = JSON.stringify(args ?? {});
  return { ok: true, text: json.length > 300 ? `${json.slice(0, 297)}...` : json };
}
