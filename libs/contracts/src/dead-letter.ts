import Type, { type Static } from "typebox";

/** Published on `mom.dlq.<stage>` whenever a service rejects input; nothing is dropped silently. */
export const DeadLetter = Type.Object(
  {
    stage: Type.String({ description: "Who rejected it, e.g. agent-runner" }),
    subject: Type.String({ description: "Subject the payload arrived on" }),
    reason: Type.String(),
    payload: Type.String({ description: "The rejected payload: UTF-8 text, or base64 when payloadEncoding says so" }),
    payloadEncoding: Type.Union([Type.Literal("utf8"), Type.Literal("base64")]),
    payloadBytes: Type.Optional(Type.Integer({ minimum: 0, description: "Size of the rejected payload in bytes" })),
    payloadTruncated: Type.Optional(
      Type.Boolean({ description: "True when `payload` holds only the head of a payload too big to copy whole (see payloadBytes)" }),
    ),
    msgId: Type.Optional(Type.String()),
    rejectedAt: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false, $id: "DeadLetter" },
);
export type DeadLetter = Static<typeof DeadLetter>;
