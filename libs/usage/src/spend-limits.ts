import type { LimitsConfig, SpendBudget } from "@mom/config";
import { type Period, PERIODS, periodEnd } from "./periods.js";
import type { LimitOverrides } from "./limit-overrides.js";
import { type Scope, scopesOf, type Spent, type SpendTotals } from "./spend-totals.js";

function budgetOf(limits: LimitsConfig, scope: Scope): { budget?: SpendBudget; path: string; name: string } {
  if (scope.kind === "global") return { budget: limits.global, path: "limits.global", name: "mom overall" };
  if (scope.kind === "adapter") return { budget: limits.adapters?.[scope.adapter], path: `limits.adapters["${scope.adapter}"]`, name: `adapter ${scope.adapter}` };
  return { budget: limits.channels?.[scope.channel], path: `limits.channels["${scope.channel}"]`, name: `this channel (${scope.channel})` };
}

const usd = (n: number) => `$${n < 1 ? n.toFixed(4) : n.toFixed(2)}`;
const tokens = (n: number) => `${Math.round(n).toLocaleString("en-US")} tokens`;
const when = (d: Date) => `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
const PERIOD_WORD: Record<Period, string> = { day: "daily", month: "monthly" };

/**
 * The first budget (channel, then adapter, then global; day before month) that `spent + extra`
 * would cross, as the message the channel sees; undefined when every budget has room. With
 * `extra` zero it says whether a budget is already used up.
 */
export function spendLimitProblem(
  limits: LimitsConfig,
  totals: SpendTotals,
  channel: string,
  adapter: string,
  extra: Spent,
  now = new Date(),
  /** The budgets changed from the web console: their message says where to raise them. */
  overrides?: Pick<LimitOverrides, "find">,
): string | undefined {
  for (const scope of scopesOf(channel, adapter)) {
    const { budget, path, name } = budgetOf(limits, scope);
    if (!budget) continue;
    for (const period of PERIODS) {
      const cap = budget[period];
      if (!cap) continue;
      const spent = totals.spent(period, now, scope);
      const changed = overrides?.find(scope, period);
      const where = changed ? `on the web console's spend page (${changed.setBy} set it there)` : "in config.json";
      const resets = `It resets at ${when(periodEnd(period, now))}; to go on sooner, raise ${path}.${period} ${where}.`;
      if (cap.usd !== undefined && spent.usd + extra.usd > cap.usd) {
        return `Spend limit reached: ${name} has used ${usd(spent.usd)} of its ${usd(cap.usd)} ${PERIOD_WORD[period]} budget${extra.usd > 0 ? ` and the next model call would cost about ${usd(extra.usd)}` : ""}. ${resets}`;
      }
      if (cap.tokens !== undefined && spent.tokens + extra.tokens > cap.tokens) {
        return `Token limit reached: ${name} has used ${tokens(spent.tokens)} of its ${tokens(cap.tokens)} ${PERIOD_WORD[period]} budget${extra.tokens > 0 ? ` and the next model call needs about ${tokens(extra.tokens)}` : ""}. ${resets}`;
      }
    }
  }
  return undefined;
}
