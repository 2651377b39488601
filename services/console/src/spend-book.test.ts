import { describe, expect, it } from "@jest/globals";
import type { SpendLimitOverride, UsageRecord } from "@mom/contracts";
import { applyLimitOverrides, limitOverrideKey } from "@mom/usage";
import { SpendBook } from "./spend-book.js";

const rec = (ts: string, channel: string, tokens: number, costUsd: number, model = "m1"): UsageRecord => ({
  id: `${ts}-${channel}-${tokens}`,
  ts,
  channel,
  adapter: channel.split("/")[0]!,
  provider: "p",
  model,
  credential: "c",
  input: tokens,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: tokens,
  costUsd,
});

describe("SpendBook", () => {
  it("sums today and this month per channel, adapter and model, and pauses what the runner would refuse", () => {
    let now = new Date("2026-11-20T12:00:00Z");
    const book = new SpendBook(() => now);
    book.add(rec("2026-10-31T23:59:00Z", "cli/local", 9_999_999, 99)); // last month: counts for nothing
    book.add(rec("2026-11-19T10:00:00Z", "cli/local", 1_000, 0.5));
    book.add(rec("2026-11-20T10:00:00Z", "cli/local", 2_000, 1.0));
    book.add(rec("2026-11-20T11:00:00Z", "slack/C1", 500, 0, "m2"));
    const limits = { channels: { "cli/local": { day: { usd: 0.75 } } }, adapters: { slack: { month: { tokens: 10_000 } } } };
    const v = book.view(limits, ["slack/C1"]);
    expect(v.by.channel.day).toEqual([
      { key: "cli/local", calls: 1, tokens: 2_000, costUsd: 1.0, unpriced: 0 },
      { key: "slack/C1", calls: 1, tokens: 500, costUsd: 0, unpriced: 1 },
    ]);
    expect(v.by.channel.month[0]).toEqual({ key: "cli/local", calls: 2, tokens: 3_000, costUsd: 1.5, unpriced: 0 });
    expect(v.by.adapter.month.map((r) => r.key)).toEqual(["cli", "slack"]);
    expect(v.by.model.month.map((r) => r.key)).toEqual(["p/m1", "p/m2"]);
    expect(v.paused).toEqual([{ channel: "cli/local", why: expect.stringMatching(/^Spend limit reached: this channel \(cli\/local\) has used \$1\.00 of its \$0\.7500 daily budget\./) }]);
    expect(v.budgets).toEqual([
      expect.objectContaining({ path: 'limits.adapters["slack"].month', spentTokens: 500, capTokens: 10_000, used: 0.05 }),
      expect.objectContaining({ path: 'limits.channels["cli/local"].day', spentUsd: 1.0, capUsd: 0.75, resetsAt: "2026-11-21T00:00:00.000Z" }),
    ]);
    // The next day the daily budget has room again; the month's sums stay.
    now = new Date("2026-11-21T00:00:01Z");
    const next = book.view(limits, []);
    expect(next.paused).toEqual([]);
    expect(next.by.channel.day).toEqual([]);
    expect(next.by.channel.month[0]!.tokens).toBe(3_000);
    // A new month starts from nothing.
    now = new Date("2026-12-01T00:00:01Z");
    expect(book.view(limits, []).by.channel.month).toEqual([]);
  });

  it("shows a budget changed from the console in force, who set it and config.json's; a lifted one pauses nothing", () => {
    const now = new Date("2026-11-20T12:00:00Z");
    const book = new SpendBook(() => now);
    book.add(rec("2026-11-20T10:00:00Z", "cli/local", 2_000, 1.0));
    const limits = { channels: { "cli/local": { day: { tokens: 1_000 } } }, global: { month: { usd: 0.5 } } };
    const changes: SpendLimitOverride[] = [
      { scope: { kind: "channel", channel: "cli/local" }, period: "day", cap: { tokens: 5_000 }, setBy: "alice (console)", setAt: "2026-11-20T11:00:00.000Z" },
      { scope: { kind: "global" }, period: "month", cap: null, setBy: "alice (console)", setAt: "2026-11-20T11:30:00.000Z" },
    ];
    const byKey = new Map(changes.map((o) => [limitOverrideKey(o.scope, o.period), o]));
    const overrides = { effective: (l: typeof limits) => applyLimitOverrides(l, changes), find: (s: SpendLimitOverride["scope"], p: "day" | "month") => byKey.get(limitOverrideKey(s, p)) };
    expect(book.view(limits, []).paused.map((p) => p.channel)).toEqual(["cli/local"]);
    const v = book.view(limits, [], overrides);
    expect(v.paused).toEqual([]);
    expect(v.budgets).toEqual([
      expect.objectContaining({ path: "limits.global.month", changed: { setBy: "alice (console)", setAt: "2026-11-20T11:30:00.000Z", lifted: true }, configured: { usd: 0.5 }, used: 0 }),
      expect.objectContaining({ path: 'limits.channels["cli/local"].day', capTokens: 5_000, configured: { tokens: 1_000 }, changed: { setBy: "alice (console)", setAt: "2026-11-20T11:00:00.000Z", lifted: false }, used: 0.4 }),
    ]);
    expect(v.budgets[0]!.capUsd).toBeUndefined();
  });
});
