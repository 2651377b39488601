import { visible, type WorkspaceToolReview } from "@mom/contracts";

/**
 * A tool review as the approver reads it: the files' names and diffs were written by whoever wrote
 * the tool — possibly a prompt-injected agent — so control, bidi and other hidden characters are
 * spelled out (`visible`, as chat approvals do), and a line cannot show one thing and run another.
 */
export function shownToolReview(tools: WorkspaceToolReview[]): WorkspaceToolReview[] {
  return tools.map((t) => ({
    ...t,
    name: visible(t.name, { newlines: false }),
    changes: t.changes.map((c) => ({ ...c, path: visible(c.path, { newlines: false }), ...(c.diff !== undefined && { diff: visible(c.diff) }) })),
  }));
}
