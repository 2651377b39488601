import type { UsageRecord } from "@mom/contracts";

/** One model call of `tokens` input tokens in cli/local at `ts`, for seeding a usage ledger in tests. */
export function usageRecord(id: string, ts: string, tokens: number): UsageRecord {
  return { id, ts, channel: "cli/local", adapter: "cli", provider: "fake", model: "fake-model", input: tokens, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: tokens, costUsd: 0 };
}
