import { describe, expect, it } from "@jest/globals";
import type { UsageRecord } from "@mom/contracts";
import { applyLimitOverrides, budgetPath, formatUsageTable, limitOverrideKey, periodEnd, periodKey, SpendTotals, spendLimitProblem, summarizeUsage } from "./index.js";

const rec = (over: Partial<UsageRecord>): UsageRecord => ({
  id: Math.random().toString(36),
  ts: "2026-11-23T10:00:00.000Z",
  channel: "slack-acme/C1",
  adapter: "slack-acme",
  provider: "anthropic",
  model: "claude-sonnet-4-5",
  input: 1000,
  output: 100,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 1100,
  costUsd: 0.5,
  ...over,
});
const now = new Date("2026-11-23T12:00:00Z");

describe("periods", () => {
  it("are UTC calendar days and months", () => {
    expect(periodKey("day", now)).toBe("2026-11-23");
    expect(periodKey("month", now)).toBe("2026-11");
    expect(periodEnd("day", now).toISOString()).toBe("2026-11-24T00:00:00.000Z");
    expect(periodEnd("month", new Date("2026-12-31T23:59:59Z")).toISOString()).toBe("2027-01-01T00:00:00.000Z");
  });
});

describe("spendLimitProblem", () => {
  const totals = new SpendTotals();
  totals.apply(rec({}));
  totals.apply(rec({ channel: "slack-acme/C2", costUsd: 1, totalTokens: 5000 }));
  totals.apply(rec({ ts: "2026-11-01T00:00:00.000Z", channel: "cli/local", adapter: "cli", costUsd: 3, totalTokens: 100 }));
  totals.apply(rec({ ts: "2026-10-31T23:59:59.000Z", costUsd: 100 })); // last month: counts nowhere now

  it("counts a call against its channel, adapter and everything, per day and month", () => {
    expect(totals.spent("day", now, { kind: "channel", channel: "slack-acme/C1" })).toEqual({ usd: 0.5, tokens: 1100 });
    expect(totals.spent("day", now, { kind: "adapter", adapter: "slack-acme" })).toEqual({ usd: 1.5, tokens: 6100 });
    expect(totals.spent("month", now, { kind: "global" })).toEqual({ usd: 4.5, tokens: 6200 });
    expect(totals.spent("day", now, { kind: "global" })).toEqual({ usd: 1.5, tokens: 6100 });
  });

  it("names the first budget the next call would cross, channel before adapter before global", () => {
    const none = { usd: 0, tokens: 0 };
    expect(spendLimitProblem({ channels: { "slack-acme/C1": { day: { usd: 1 } } } }, totals, "slack-acme/C1", "slack-acme", { usd: 0.4, tokens: 10 }, now)).toBeUndefined();
    expect(spendLimitProblem({ channels: { "slack-acme/C1": { day: { usd: 1 } } } }, totals, "slack-acme/C1", "slack-acme", { usd: 0.6, tokens: 10 }, now)).toBe(
      'Spend limit reached: this channel (slack-acme/C1) has used $0.5000 of its $1.00 daily budget and the next model call would cost about $0.6000. It resets at 2026-11-24 00:00 UTC; to go on sooner, raise limits.channels["slack-acme/C1"].day in config.json.',
    );
    expect(spendLimitProblem({ adapters: { "slack-acme": { month: { tokens: 6000 } } } }, totals, "slack-acme/C9", "slack-acme", none, now)).toBe(
      'Token limit reached: adapter slack-acme has used 6,100 tokens of its 6,000 tokens monthly budget. It resets at 2026-12-01 00:00 UTC; to go on sooner, raise limits.adapters["slack-acme"].month in config.json.',
    );
    expect(spendLimitProblem({ global: { month: { usd: 4 } }, channels: { "cli/local": { day: { usd: 1 } } } }, totals, "cli/local", "cli", none, now)).toMatch(/^Spend limit reached: mom overall has used \$4\.50 of its \$4\.00 monthly budget/);
    expect(spendLimitProblem({}, totals, "cli/local", "cli", { usd: 1e9, tokens: 1e9 }, now)).toBeUndefined();
  });
});

describe("usage report", () => {
  it("groups by channel, adapter or model, largest cost first, with a total", () => {
    const records = [rec({}), rec({ channel: "cli/local", adapter: "cli", model: "claude-haiku-4-5", costUsd: 2 }), rec({ costUsd: 0.25 })];
    const s = summarizeUsage(records, "channel");
    expect(s.rows.map((r) => [r.key, r.calls, r.costUsd])).toEqual([["cli/local", 1, 2], ["slack-acme/C1", 2, 0.75]]);
    expect(s.total).toMatchObject({ calls: 3, input: 3000, totalTokens: 3300, costUsd: 2.75 });
    expect(summarizeUsage(records, "model").rows.map((r) => r.key)).toEqual(["anthropic/claude-haiku-4-5", "anthropic/claude-sonnet-4-5"]);
    expect(formatUsageTable(summarizeUsage(records, "adapter"), "adapter").split("\n")).toEqual([
      "adapter     calls  input  output  cache read  cache write  tokens     cost",
      "cli             1  1,000     100           0            0   1,100  $2.0000",
      "slack-acme      2  2,000     200           0            0   2,200  $0.7500",
      "total           3  3,000     300           0            0   3,300  $2.7500",
    ]);
  });

  it("shows $? for a model without prices, not $0.0000, and a total that lacks them as a lower bound", () => {
    const records = [rec({ costUsd: 0.25 }), rec({ channel: "cli/local", adapter: "cli", provider: "ollama", model: "llama3.1:8b", costUsd: 0 })];
    expect(formatUsageTable(summarizeUsage(records, "model"), "model").split("\n")).toEqual([
      "model                        calls  input  output  cache read  cache write  tokens         cost",
      "anthropic/claude-sonnet-4-5      1  1,000     100           0            0   1,100      $0.2500",
      "ollama/llama3.1:8b               1  1,000     100           0            0   1,100           $?",
      "total                            2  2,000     200           0            0   2,200  $0.2500 + ?",
    ]);
  });
});

describe("usage report of stopped answers", () => {
  it("counts a call recorded at mom's estimate with the rest, and says how many were", () => {
    const records = [rec({ costUsd: 0.25 }), rec({ costUsd: 0.5, estimated: true })];
    expect(formatUsageTable(summarizeUsage(records, "adapter"), "adapter").split("\n")).toEqual([
      "adapter          calls  input  output  cache read  cache write  tokens     cost",
      "slack-acme  2 (1 est.)  2,000     200           0            0   2,200  $0.7500",
      "total       2 (1 est.)  2,000     200           0            0   2,200  $0.7500",
      "est.: answers stopped mid-stream, whose usage the provider never reported, counted at mom's estimate",
    ]);
  });
});

describe("limit overrides (the web console's changes)", () => {
  const limits = { global: { month: { usd: 100 } }, channels: { "cli/local": { day: { tokens: 1000 }, month: { usd: 5 } } } };
  const by = { setBy: "alice (console)", setAt: "2026-11-23T11:00:00.000Z" };

  it("take the place of config.json's budget for their scope and period, lift it with null, and leave the rest alone", () => {
    const out = applyLimitOverrides(limits, [
      { scope: { kind: "channel", channel: "cli/local" }, period: "day", cap: { tokens: 50_000 }, ...by },
      { scope: { kind: "global" }, period: "month", cap: null, ...by },
      { scope: { kind: "adapter", adapter: "slack-acme" }, period: "day", cap: { usd: 2 }, ...by },
    ]);
    expect(out).toEqual({ global: {}, channels: { "cli/local": { day: { tokens: 50_000 }, month: { usd: 5 } } }, adapters: { "slack-acme": { day: { usd: 2 } } } });
    expect(limits.channels["cli/local"].day).toEqual({ tokens: 1000 }); // not changed in place
  });

  it("have one key per scope and period, channel ids escaped", () => {
    expect(limitOverrideKey({ kind: "global" }, "month")).toBe("global.month");
    expect(limitOverrideKey({ kind: "adapter", adapter: "slack-acme" }, "day")).toBe("adapter.slack-acme.day");
    expect(limitOverrideKey({ kind: "channel", channel: "cli/a.b c" }, "day")).toBe("channel.cli/a=2eb=20c.day");
    expect(budgetPath({ kind: "channel", channel: "cli/local" }, "day")).toBe('limits.channels["cli/local"].day');
  });

  it("say where to raise a budget changed from the console", () => {
    const totals = new SpendTotals();
    totals.apply(rec({ channel: "cli/local", adapter: "cli", totalTokens: 2000, costUsd: 0 }));
    const changed = { scope: { kind: "channel" as const, channel: "cli/local" }, period: "day" as const, cap: { tokens: 1500 }, ...by };
    const effective = applyLimitOverrides(limits, [changed]);
    const find = (s: { kind: string }, p: string) => (s.kind === "channel" && p === "day" ? changed : undefined);
    expect(spendLimitProblem(effective, totals, "cli/local", "cli", { usd: 0, tokens: 0 }, now, { find })).toBe(
      'Token limit reached: this channel (cli/local) has used 2,000 tokens of its 1,500 tokens daily budget. It resets at 2026-11-24 00:00 UTC; to go on sooner, raise limits.channels["cli/local"].day on the web console\'s spend page (alice (console) set it there).',
    );
    expect(spendLimitProblem(applyLimitOverrides(limits, [{ ...changed, cap: null }]), totals, "cli/local", "cli", { usd: 0, tokens: 0 }, now)).toBeUndefined();
  });
});
