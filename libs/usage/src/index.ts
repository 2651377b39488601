export { type Period, PERIODS, periodKey, periodEnd, monthStart } from "./periods.js";
export { SpendTotals, type Spent, type Scope, scopesOf, scopeKey } from "./spend-totals.js";
export { spendLimitProblem } from "./spend-limits.js";
export { UsageLedger, type UsageLedgerOptions, openLedgerStream, validRecords, LEDGER_MAX_AGE_MS } from "./usage-ledger.js";
export { summarizeUsage, formatUsageTable, type UsageGrouping, type UsageRow } from "./usage-report.js";
export { LimitOverrides, applyLimitOverrides, hasLimits, limitOverrideKey, budgetPath } from "./limit-overrides.js";
