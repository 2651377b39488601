import { describe, expect, it } from "@jest/globals";
import type { AssistantMessage } from "@mariozechner/pi-ai";
import type { ModelAccess } from "../model-access.js";
import { TokenBudget } from "./token-budget.js";

const model = { provider: "p", id: "m" } as Parameters<ModelAccess["pick"]>[0];
const answer = (totalTokens: number) => ({ usage: { totalTokens } }) as AssistantMessage;
const estimate = (inputTokens: number, outputTokens = 1024) => () => ({ inputTokens, outputTokens, usd: 0 });

describe("TokenBudget", () => {
  it("admits a call while used + its estimate stays within the budget, then names the budget, what was used and what the call needed", async () => {
    const budget = new TokenBudget(10_000);
    const access = budget.access(undefined);
    expect(await access.admit(estimate(3_000), model)).toBeUndefined();
    await access.settled("default", answer(4_000), model);
    expect(await access.admit(estimate(4_976), model)).toBeUndefined(); // 4,000 + 6,000 = the budget exactly
    await access.settled("default", answer(5_500), model);
    expect(budget.used).toBe(9_500);
    expect(await access.admit(estimate(100), model)).toBe("used its budget of 10,000 tokens (9,500 used; its next model call needed about 1,124)");
    expect(budget.exceeded).toContain("used its budget of 10,000 tokens");
  });

  it("goes through the channel's access after its own check: spend limits, credentials and the ledger see the child's calls", async () => {
    const seen: string[] = [];
    const inner: ModelAccess = {
      hasCredentials: () => true,
      admit: async (e) => (seen.push(`admit ${e().inputTokens}`), e().inputTokens > 50_000 ? "Token limit reached: this channel has used…" : undefined),
      pick: async () => ({ id: "profile-a", apiKey: "k" }),
      refused: async (id) => (seen.push(`refused ${id}`), true),
      settled: async (id, m) => void seen.push(`settled ${id} ${m.usage.totalTokens}`),
    };
    const budget = new TokenBudget(1_000_000);
    const access = budget.access(inner);
    expect(access.hasCredentials("p")).toBe(true);
    expect(await access.pick(model)).toEqual({ id: "profile-a", apiKey: "k" });
    expect(await access.admit(estimate(100), model)).toBeUndefined();
    expect(await access.refused("profile-a", { message: "429" }, model)).toBe(true);
    await access.settled("profile-a", answer(700), model);
    // The channel's own limit refuses; the budget is not what stopped it.
    expect(await access.admit(estimate(60_000), model)).toBe("Token limit reached: this channel has used…");
    expect(budget.exceeded).toBeUndefined();
    expect(seen).toEqual(["admit 100", "refused profile-a", "settled profile-a 700", "admit 60000"]);
    // Over its own budget, the channel is not even asked.
    const small = new TokenBudget(500).access(inner);
    expect(await small.admit(estimate(100), model)).toMatch(/^used its budget of 500 tokens/);
    expect(seen).toHaveLength(4);
  });

  it("without the channel's access: pi's own credential, one attempt", async () => {
    const access = new TokenBudget(10).access(undefined);
    expect(access.hasCredentials("p")).toBe(false);
    expect(await access.pick(model)).toEqual({ id: "default" });
    expect(await access.refused("default", { message: "401" }, model)).toBe(false);
  });
});
