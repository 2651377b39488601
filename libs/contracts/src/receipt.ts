import Type, { type Static } from "typebox";

export const RiskLevel = Type.Union([Type.Literal("read"), Type.Literal("write"), Type.Literal("destructive")]);

export const ReceiptType = Type.Union([
  Type.Literal("tool.call.requested"),
  Type.Literal("tool.call.approved"),
  Type.Literal("tool.call.denied"),
  Type.Literal("tool.call.started"),
  Type.Literal("tool.call.succeeded"),
  Type.Literal("tool.call.failed"),
  Type.Literal("approval.refused"),
  Type.Literal("auth.profile.rotated"),
  Type.Literal("delivery.succeeded"),
  Type.Literal("delivery.failed"),
]);
export type ReceiptType = Static<typeof ReceiptType>;

/**
 * One step of one tool call, append-only: on `mom.receipts.<adapter>.<channel>` (msg-id
 * `receiptId`) and in the channel's receipts.jsonl. `approval.refused` records a decision from
 * someone who may not decide. `auth.profile.rotated` records a model call moving to another
 * credential (toolId `auth.profile.rotate`, no toolCallId, detail `<from> -> <to>: <reason>`).
 * `delivery.succeeded` / `delivery.failed` record what reached the person: the ingress that drew a
 * run's answer says the platform accepted it (detail: the platform's message ids) or refused it
 * (detail: the platform's error, also when the platform reports it later); toolId
 * `chat.deliver`, no toolCallId, argsHash the sha256 of the answer's text, actor `ingress-<adapter>`.
 */
export const Receipt = Type.Object(
  {
    receiptId: Type.String({ minLength: 1 }),
    type: ReceiptType,
    runId: Type.String(),
    toolCallId: Type.String(),
    toolId: Type.String(),
    risk: RiskLevel,
    ts: Type.String({ format: "date-time" }),
    argsHash: Type.String({ description: "sha256 of the canonical JSON of the arguments" }),
    detail: Type.Optional(Type.String()),
    actor: Type.Optional(Type.String({ description: "Who approved, denied or was refused" })),
    parentToolCallId: Type.Optional(Type.String({ description: "The run_code call a script's nested tool call was made from, or the spawn call a sub-agent's call was made from" })),
  },
  { additionalProperties: false, $id: "Receipt" },
);
export type Receipt = Static<typeof Receipt>;

/** What a run did with tools, derived from its receipts; shown under the answer. */
export const ToolActivity = Type.Object(
  {
    toolCallId: Type.String(),
    toolId: Type.String(),
    risk: RiskLevel,
    status: Type.Union([Type.Literal("succeeded"), Type.Literal("failed"), Type.Literal("denied"), Type.Literal("pending")]),
    label: Type.Optional(Type.String()),
    detail: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type ToolActivity = Static<typeof ToolActivity>;
