import type { UsageRecord } from "@mom/contracts";
import { PERIODS, type Period, periodKey } from "./periods.js";

export interface Spent {
  usd: number;
  tokens: number;
}

/** Who a budget belongs to: everything, one adapter, one channel. */
export type Scope = { kind: "global" } | { kind: "adapter"; adapter: string } | { kind: "channel"; channel: string };

export function scopeKey(s: Scope): string {
  return s.kind === "global" ? "global" : s.kind === "adapter" ? `adapter:${s.adapter}` : `channel:${s.channel}`;
}

/** The scopes a channel's call counts against, narrowest first. */
export function scopesOf(channel: string, adapter: string): Scope[] {
  return [{ kind: "channel", channel }, { kind: "adapter", adapter }, { kind: "global" }];
}

/** Running totals per period and scope, built from ledger records (each applied once, by sequence). */
export class SpendTotals {
  private readonly totals = new Map<string, Spent>();

  apply(r: UsageRecord): void {
    const at = new Date(r.ts);
    for (const period of PERIODS) {
      for (const scope of scopesOf(r.channel, r.adapter)) {
        const key = `${period}:${periodKey(period, at)}:${scopeKey(scope)}`;
        const t = this.totals.get(key) ?? { usd: 0, tokens: 0 };
        t.usd += r.costUsd;
        t.tokens += r.totalTokens;
        this.totals.set(key, t);
      }
    }
  }

  spent(period: Period, at: Date, scope: Scope): Spent {
    return { ...(this.totals.get(`${period}:${periodKey(period, at)}:${scopeKey(scope)}`) ?? { usd: 0, tokens: 0 }) };
  }
}
