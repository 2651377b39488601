import { describe, expect, it } from "@jest/globals";
import { formatCost, formatUsage } from "./format-usage.js";

const usage = (total: number) => ({ input: 4955, output: 64, cacheRead: 0, cacheWrite: 0, totalTokens: 5019, cost: { input: total, output: 0, cacheRead: 0, cacheWrite: 0, total } });

describe("formatUsage", () => {
  it("prices a model with prices", () => {
    expect(formatUsage(usage(0.0158), 2100)).toBe("4,955 in · 64 out · $0.0158 · 2.1s");
  });

  it("says $? when tokens were used and nothing was charged (a model without prices), not $0.0000", () => {
    expect(formatUsage(usage(0), 2100)).toBe("4,955 in · 64 out · $? · 2.1s");
    expect(formatCost(0, 0)).toBe("$0.0000");
  });
});
