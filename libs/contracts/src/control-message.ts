import Type, { type Static } from "typebox";

const Actor = Type.Object(
  { id: Type.String({ minLength: 1 }), username: Type.Optional(Type.String()) },
  { additionalProperties: false },
);

export const AbortControl = Type.Object(
  {
    type: Type.Literal("abort"),
    ts: Type.String({ format: "date-time" }),
    requestedBy: Type.Optional(Actor),
    runId: Type.Optional(Type.String({ description: "Abort only this run; omitted aborts whatever runs" })),
  },
  { additionalProperties: false },
);

export const ApprovalDecision = Type.Object(
  {
    type: Type.Literal("approval_decision"),
    ts: Type.String({ format: "date-time" }),
    approvalId: Type.String({ minLength: 1 }),
    decision: Type.Union([Type.Literal("allow-once"), Type.Literal("deny")]),
    decidedBy: Actor,
  },
  { additionalProperties: false },
);

/** Published by an ingress on `mom.ctl.<adapter>.<channel>`. */
export const ControlMessage = Type.Union([AbortControl, ApprovalDecision], { $id: "ControlMessage" });
export type ControlMessage = Static<typeof ControlMessage>;
