/** Budgets are per calendar day and month in UTC. */
export type Period = "day" | "month";
export const PERIODS: readonly Period[] = ["day", "month"];

/** `2026-11-23` for a day, `2026-11` for a month. */
export function periodKey(period: Period, at: Date): string {
  const iso = at.toISOString();
  return period === "day" ? iso.slice(0, 10) : iso.slice(0, 7);
}

/** When the period containing `at` ends (the next one starts). */
export function periodEnd(period: Period, at: Date): Date {
  const y = at.getUTCFullYear();
  const m = at.getUTCMonth();
  return period === "day" ? new Date(Date.UTC(y, m, at.getUTCDate() + 1)) : new Date(Date.UTC(y, m + 1, 1));
}

export function monthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}
