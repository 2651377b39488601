import Type, { type Static } from "typebox";

// The web console reviews and approves workspace tools (docs/console.md "Tools") by asking the
// runners, which own the workspace and data dir, over NATS request/reply: one runner of the queue
// group answers. The console never reads the disk.

/** `<ns>.tools.review` (list the workspace tools and what changed) and `<ns>.tools.approve`. */
export function toolsSubject(namespace: string, op: "review" | "approve"): string {
  return `${namespace}.tools.${op}`;
}
/** The queue group the runners answer in: one answer per request. */
export const TOOLS_QUEUE = "agent-runner";

export const ToolReviewRequest = Type.Object({}, { additionalProperties: false, $id: "ToolReviewRequest" });
export type ToolReviewRequest = Static<typeof ToolReviewRequest>;

/** One file that differs from the approved version (or every file of a tool never approved). */
export const ToolFileChange = Type.Object(
  {
    path: Type.String({ description: "Relative to the tools dir, e.g. greet/index.ts or _lib/util.ts" }),
    change: Type.Union([Type.Literal("added"), Type.Literal("removed"), Type.Literal("changed")]),
    /** A unified diff from the approved text to the current one, when both sides are kept as text. */
    diff: Type.Optional(Type.String()),
    /** Why there is no diff (binary, large, under node_modules, not kept), or that it was clipped. */
    note: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type ToolFileChange = Static<typeof ToolFileChange>;

export const WorkspaceToolReview = Type.Object(
  {
    name: Type.String({ minLength: 1, description: "The tool's directory under workspace/tools" }),
    state: Type.Union([Type.Literal("approved"), Type.Literal("new"), Type.Literal("changed")]),
    sha256: Type.String({ pattern: "^[0-9a-f]{64}$", description: "What the tool is now: an approval names it" }),
    files: Type.Integer({ minimum: 0 }),
    approved: Type.Optional(Type.Object({ sha256: Type.String(), approvedAt: Type.String(), approvedBy: Type.Optional(Type.String()) }, { additionalProperties: false })),
    /** False when no copy of the approved version was kept (approved before copies were kept): no diff. */
    copyKept: Type.Boolean(),
    /** Empty when approved. */
    changes: Type.Array(ToolFileChange),
  },
  { additionalProperties: false },
);
export type WorkspaceToolReview = Static<typeof WorkspaceToolReview>;

export const ToolReviewReply = Type.Union(
  [
    Type.Object({ ok: Type.Literal(true), runner: Type.String(), tools: Type.Array(WorkspaceToolReview) }, { additionalProperties: false }),
    Type.Object({ ok: Type.Literal(false), error: Type.String() }, { additionalProperties: false }),
  ],
  { $id: "ToolReviewReply" },
);
export type ToolReviewReply = Static<typeof ToolReviewReply>;

/** Approve `name` as it is when it still has the digest the person reviewed (`sha256`). */
export const ToolApproveRequest = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    sha256: Type.String({ pattern: "^[0-9a-f]{64}$" }),
    by: Type.String({ minLength: 1, description: "Who approves, e.g. \"alice (console)\"" }),
  },
  { additionalProperties: false, $id: "ToolApproveRequest" },
);
export type ToolApproveRequest = Static<typeof ToolApproveRequest>;

export const ToolApproveReply = Type.Union(
  [
    Type.Object({ ok: Type.Literal(true), runner: Type.String(), sha256: Type.String(), files: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
    Type.Object({ ok: Type.Literal(false), error: Type.String() }, { additionalProperties: false }),
  ],
  { $id: "ToolApproveReply" },
);
export type ToolApproveReply = Static<typeof ToolApproveReply>;
