import type { Usage } from "@mom/contracts";

const n = (x: number) => x.toLocaleString("en-US");
const compact = (x: number) => (x >= 1000 ? `${Math.round(x / 1000)}k` : String(x));

/** A tool call's duration: `12 ms`, `3.4 s`. */
export function formatDuration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * `$0.0158`, or `$?` when tokens were used but nothing was charged: the model has no prices (a
 * custom model without `cost` in models.json), and `$0.0000` would claim it was free.
 */
export function formatCost(usd: number, tokens: number): string {
  return usd === 0 && tokens > 0 ? "$?" : `$${usd.toFixed(4)}`;
}

/** One line every adapter shows: tokens in/out (and cache), cost, context use, duration. */
export function formatUsage(u: Usage, durationMs: number): string {
  const parts = [`${n(u.input)} in`, `${n(u.output)} out`];
  if (u.cacheRead || u.cacheWrite) parts.push(`cache ${n(u.cacheRead)} read / ${n(u.cacheWrite)} write`);
  parts.push(formatCost(u.cost.total, u.input + u.output + u.cacheRead + u.cacheWrite));
  if (u.contextTokens !== undefined && u.contextWindow) {
    parts.push(`context ${compact(u.contextTokens)}/${compact(u.contextWindow)} (${((u.contextTokens / u.contextWindow) * 100).toFixed(1)}%)`);
  }
  parts.push(`${(durationMs / 1000).toFixed(1)}s`);
  return parts.join(" · ");
}
