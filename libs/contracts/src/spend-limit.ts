import Type, { type Static } from "typebox";
import { ADAPTER_NAME_PATTERN } from "./channel-id.js";

/**
 * A budget for one period: USD (from the model's prices) and/or tokens (input + output + cache).
 * config.json's `limits` is made of these, and so is a limit changed from the web console.
 */
export const SpendAmount = Type.Object(
  {
    usd: Type.Optional(Type.Number({ exclusiveMinimum: 0, expected: "a number of US dollars > 0", description: "US dollars, as priced by the model's cost in pi-ai or models.json" })),
    tokens: Type.Optional(Type.Integer({ minimum: 1, description: "Tokens: input + output + cache read + cache write" })),
  },
  { additionalProperties: false },
);
export type SpendAmount = Static<typeof SpendAmount>;

/** `<NS>_LIMITS`: the KV bucket of spend limits changed at run time (docs/console.md), made by the runners. */
export function limitsBucket(namespace: string): string {
  return `${namespace.toUpperCase().replace(/-/g, "_")}_LIMITS`;
}

/**
 * One budget of config.json's `limits` changed from the web console: it takes the place of
 * `limits.<scope>.<period>` for every runner until it is removed (`cap: null` lifts the limit).
 * Written by the console, read by every runner's spend check and by the console's spend page.
 */
export const SpendLimitOverride = Type.Object(
  {
    scope: Type.Union([
      Type.Object({ kind: Type.Literal("global") }, { additionalProperties: false }),
      Type.Object({ kind: Type.Literal("adapter"), adapter: Type.String({ pattern: ADAPTER_NAME_PATTERN.source }) }, { additionalProperties: false }),
      Type.Object({ kind: Type.Literal("channel"), channel: Type.String({ pattern: "^[a-z0-9-]+/.+$" }) }, { additionalProperties: false }),
    ]),
    period: Type.Union([Type.Literal("day"), Type.Literal("month")]),
    cap: Type.Union([SpendAmount, Type.Null()], { description: "The budget in force instead of config.json's; null: no limit" }),
    setBy: Type.String({ minLength: 1, description: "Who changed it, e.g. \"alice (console)\"" }),
    setAt: Type.String({ format: "date-time" }),
  },
  { additionalProperties: false, $id: "SpendLimitOverride" },
);
export type SpendLimitOverride = Static<typeof SpendLimitOverride>;
