// Platforms cap what one message carries besides its text length: Discord takes 10 files or 10
// embeds per message and 6,000 characters over all its embeds. Items are grouped, in order, into
// as few messages as fit.

export interface BatchLimits<T> {
  /** Items per batch. */
  count: number;
  /** Total weight per batch (with `weigh`): a single item heavier than this is a batch of its own. */
  weight?: number;
  weigh?: (item: T) => number;
}

/** `items` in order, in consecutive batches within the limits; no item is dropped or split. */
export function batches<T>(items: readonly T[], limits: BatchLimits<T>): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  let weight = 0;
  for (const item of items) {
    const w = limits.weigh?.(item) ?? 0;
    if (cur.length && (cur.length >= limits.count || (limits.weight !== undefined && weight + w > limits.weight))) {
      out.push(cur);
      cur = [];
      weight = 0;
    }
    cur.push(item);
    weight += w;
  }
  if (cur.length) out.push(cur);
  return out;
}
