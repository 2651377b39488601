import type { LimitsConfig } from "@mom/config";
import { parseQualifiedChannelId, type UsageRecord } from "@mom/contracts";
import { budgetPath, type LimitOverrides, type Period, PERIODS, periodEnd, periodKey, type Scope, spendLimitProblem, SpendTotals, type UsageGrouping } from "@mom/usage";

export interface SpendRow {
  key: string;
  calls: number;
  tokens: number;
  costUsd: number;
  /** Calls that used tokens but cost nothing: their model has no prices in models.json. */
  unpriced: number;
}

/** One budget (config.json's, or changed from the console) with what its scope has used in the current period. */
export interface BudgetLine {
  /** Where it is configured, e.g. limits.channels["cli/local"].day */
  path: string;
  /** Who it is for, as the form names it back */
  scopeRef: Scope;
  scope: string;
  period: Period;
  /** The cap in force (none: lifted) */
  capUsd?: number;
  capTokens?: number;
  /** config.json's cap, when it has one */
  configured?: { usd?: number; tokens?: number };
  /** Set from the console in place of config.json's (cap: null = lifted) */
  changed?: { setBy: string; setAt: string; lifted: boolean };
  spentUsd: number;
  spentTokens: number;
  /** The used share of the tighter cap, 0..1+ (0 when lifted) */
  used: number;
  resetsAt: string;
}

export interface SpendView {
  day: string;
  month: string;
  /** Channels whose next model call the runner refuses: its own words (spendLimitProblem). */
  paused: Array<{ channel: string; why: string }>;
  budgets: BudgetLine[];
  /** usage per grouping: today's and this month's rows, largest cost first */
  by: Record<UsageGrouping, { day: SpendRow[]; month: SpendRow[] }>;
}

const GROUPINGS: readonly UsageGrouping[] = ["channel", "adapter", "model"];
const keyOf = (r: UsageRecord, by: UsageGrouping) => (by === "channel" ? r.channel : by === "adapter" ? r.adapter : `${r.provider}/${r.model}`);

/**
 * This month's usage ledger, summed as it arrives: the runner's own SpendTotals (so a channel is
 * shown paused by the very function the runner's ModelGuard admits calls with) and rows per
 * channel / adapter / model for today and this month. Only sums are kept, never the records.
 */
export class SpendBook {
  private totals = new SpendTotals();
  private readonly rows = new Map<string, SpendRow>();
  private month?: string;

  constructor(private readonly now: () => Date = () => new Date()) {}

  add(r: UsageRecord): void {
    const at = new Date(r.ts);
    if (periodKey("month", at) !== this.roll(this.now())) return;
    this.totals.apply(r);
    for (const period of PERIODS) {
      for (const by of GROUPINGS) {
        const id = `${periodKey(period, at)}|${by}|${keyOf(r, by)}`;
        const row = this.rows.get(id) ?? { key: keyOf(r, by), calls: 0, tokens: 0, costUsd: 0, unpriced: 0 };
        row.calls++;
        row.tokens += r.totalTokens;
        row.costUsd += r.costUsd;
        if (r.costUsd === 0 && r.totalTokens > 0) row.unpriced++;
        this.rows.set(id, row);
      }
    }
  }

  /** A new month: last month's sums count against no budget any more. */
  private roll(now: Date): string {
    const month = periodKey("month", now);
    if (this.month !== month) {
      this.month = month;
      this.totals = new SpendTotals();
      this.rows.clear();
    }
    return month;
  }

  /**
   * `limits`: config.json's; `overrides`: the budgets changed from the console, in force instead.
   * `channels`: every channel worth checking (seen on the bus); the configured ones are added.
   */
  view(limits: LimitsConfig, channels: Iterable<string>, overrides?: Pick<LimitOverrides, "effective" | "find">): SpendView {
    const now = this.now();
    const day = periodKey("day", now);
    const month = periodKey("month", now);
    this.roll(now);
    const effective = overrides?.effective(limits) ?? limits;
    const list = (period: Period, by: UsageGrouping) => {
      const prefix = `${period === "day" ? day : month}|${by}|`;
      return [...this.rows.entries()].filter(([k]) => k.startsWith(prefix)).map(([, v]) => ({ ...v })).sort((a, b) => b.costUsd - a.costUsd || b.tokens - a.tokens || a.key.localeCompare(b.key));
    };
    const by = Object.fromEntries(GROUPINGS.map((g) => [g, { day: list("day", g), month: list("month", g) }])) as SpendView["by"];
    const candidates = new Set([...channels, ...Object.keys(effective.channels ?? {}), ...by.channel.month.map((r) => r.key)]);
    const paused: SpendView["paused"] = [];
    for (const channel of [...candidates].sort()) {
      let adapter: string;
      try {
        adapter = parseQualifiedChannelId(channel).adapter;
      } catch {
        continue;
      }
      const why = spendLimitProblem(effective, this.totals, channel, adapter, { usd: 0, tokens: 0 }, now, overrides);
      if (why) paused.push({ channel, why });
    }
    return { day, month, paused, budgets: this.budgets(limits, effective, overrides, now), by };
  }

  /** Every budget config.json sets or the console changed (a lifted one too), in config.json's order. */
  private budgets(limits: LimitsConfig, effective: LimitsConfig, overrides: Pick<LimitOverrides, "find"> | undefined, now: Date): BudgetLine[] {
    const scopes: Array<[Scope, string]> = [
      [{ kind: "global" }, "mom overall"],
      ...[...new Set([...Object.keys(limits.adapters ?? {}), ...Object.keys(effective.adapters ?? {})])].map((a): [Scope, string] => [{ kind: "adapter", adapter: a }, `adapter ${a}`]),
      ...[...new Set([...Object.keys(limits.channels ?? {}), ...Object.keys(effective.channels ?? {})])].map((c): [Scope, string] => [{ kind: "channel", channel: c }, `channel ${c}`]),
    ];
    const budgetOf = (l: LimitsConfig, s: Scope) => (s.kind === "global" ? l.global : s.kind === "adapter" ? l.adapters?.[s.adapter] : l.channels?.[s.channel]);
    const out: BudgetLine[] = [];
    for (const [scope, name] of scopes) {
      for (const period of PERIODS) {
        const cap = budgetOf(effective, scope)?.[period];
        const configured = budgetOf(limits, scope)?.[period];
        const o = overrides?.find(scope, period);
        if (!cap && !configured && !o) continue;
        const spent = this.totals.spent(period, now, scope);
        const shares = [cap?.usd !== undefined ? spent.usd / cap.usd : 0, cap?.tokens !== undefined ? spent.tokens / cap.tokens : 0];
        out.push({
          path: budgetPath(scope, period),
          scopeRef: scope,
          scope: name,
          period,
          ...(cap?.usd !== undefined && { capUsd: cap.usd }),
          ...(cap?.tokens !== undefined && { capTokens: cap.tokens }),
          ...(configured && { configured: { ...configured } }),
          ...(o && { changed: { setBy: o.setBy, setAt: o.setAt, lifted: o.cap === null } }),
          spentUsd: spent.usd,
          spentTokens: spent.tokens,
          used: Math.max(...shares.map((x) => (Number.isFinite(x) ? x : 1))),
          resetsAt: periodEnd(period, now).toISOString(),
        });
      }
    }
    return out;
  }
}
