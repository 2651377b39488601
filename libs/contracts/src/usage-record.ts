import Type, { type Static } from "typebox";

/**
 * One model call's usage, appended to the usage ledger on `mom.usage.<adapter>.<channel>`
 * (stream `MOM_USAGE`, msg-id `id`). Spend limits and `mom usage` are computed from it.
 */
export const UsageRecord = Type.Object(
  {
    id: Type.String({ minLength: 1, description: "Unique per model call" }),
    ts: Type.String({ format: "date-time" }),
    channel: Type.String({ description: "Qualified channel id <adapter>/<channelId>" }),
    adapter: Type.String(),
    runId: Type.Optional(Type.String()),
    provider: Type.String(),
    model: Type.String(),
    credential: Type.Optional(Type.String({ description: "Credential id (auth profile id or env); never the secret" })),
    input: Type.Integer({ minimum: 0 }),
    output: Type.Integer({ minimum: 0 }),
    cacheRead: Type.Integer({ minimum: 0 }),
    cacheWrite: Type.Integer({ minimum: 0 }),
    totalTokens: Type.Integer({ minimum: 0 }),
    costUsd: Type.Number({ minimum: 0, description: "By the model's prices (pi-ai, or cost in models.json)" }),
    estimated: Type.Optional(
      Type.Boolean({ description: "The provider's usage never came (the answer was stopped mid-stream): input estimated from the context as spend limits do, output from what had streamed" }),
    ),
  },
  { additionalProperties: false, $id: "UsageRecord" },
);
export type UsageRecord = Static<typeof UsageRecord>;
