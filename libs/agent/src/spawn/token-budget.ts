import type { ModelAccess } from "../model-access.js";

const n = (x: number) => x.toLocaleString("en-US");

/**
 * A sub-agent's token budget around the channel's own model access: before each of the child's
 * model calls, what it has used plus the call's estimate (as a spend limit counts it) must stay
 * within the budget; then the channel's rules (spend limits, credentials) apply as for any call,
 * and what the call used is recorded by the channel — as the parent run's, whose run is current.
 */
export class TokenBudget {
  /** Tokens of the child's finished calls (input, output and cache, as the usage ledger counts them). */
  used = 0;
  /** Why the budget stopped the child, once it has. */
  exceeded?: string;

  constructor(readonly limit: number) {}

  access(inner: ModelAccess | undefined): ModelAccess {
    return {
      hasCredentials: (provider) => inner?.hasCredentials(provider) ?? false,
      admit: async (estimate, model) => {
        const e = estimate();
        const next = e.inputTokens + e.outputTokens;
        if (this.used + next > this.limit) {
          this.exceeded = `used its budget of ${n(this.limit)} tokens (${n(this.used)} used; its next model call needed about ${n(next)})`;
          return this.exceeded;
        }
        return inner?.admit(() => e, model);
      },
      // Without the channel's access: pi's own credential lookup, one attempt, as a channel without a guard.
      pick: (model) => inner?.pick(model) ?? Promise.resolve({ id: "default" }),
      refused: (id, refusal, model) => inner?.refused(id, refusal, model) ?? Promise.resolve(false),
      settled: async (id, message, model) => {
        this.used += message.usage?.totalTokens ?? 0;
        await inner?.settled(id, message, model);
      },
    };
  }
}
