import type { SessionManager } from "@mariozechner/pi-coding-agent";

type Branch = ReturnType<SessionManager["getBranch"]>;

/**
 * pi's SessionManager.getBranch builds the path from the leaf to the root with Array.unshift,
 * which is quadratic in the path's length, and pi calls it after every model answer (compaction
 * check, context usage). A channel's session grows for years, so this replaces it on our instance
 * with a walk that stops at the last path it built (entries are only ever appended) and returns
 * the same entries in the same order.
 */
export function linearGetBranch(sm: SessionManager): void {
  let last: { leafId: string; path: Branch } | undefined;
  sm.getBranch = (fromId?: string): Branch => {
    const start = fromId ?? sm.getLeafId();
    const walked: Branch = [];
    let current = start ? sm.getEntry(start) : undefined;
    while (current && current.id !== last?.leafId) {
      walked.push(current);
      current = current.parentId ? sm.getEntry(current.parentId) : undefined;
    }
    const path = current && last ? last.path.concat(walked.reverse()) : walked.reverse();
    if (start) last = { leafId: start, path };
    return path.slice();
  };
}

/**
 * Every write pi makes to the session file (context.jsonl) passes `guard` first: a runner that
 * lost its channel to another must not add a line to the file the new owner writes. pi has no
 * hook for it, so its two private writers are wrapped on our instance (checked by session-path.test.ts).
 */
export function fenceSessionWrites(sm: SessionManager, guard: () => void): void {
  const writers = sm as unknown as { _persist(entry: unknown): void; _rewriteFile(): void };
  if (typeof writers._persist !== "function" || typeof writers._rewriteFile !== "function") {
    throw new Error("pi's SessionManager has no _persist/_rewriteFile any more: context.jsonl writes cannot be fenced (update fenceSessionWrites)");
  }
  const persist = writers._persist.bind(sm);
  const rewrite = writers._rewriteFile.bind(sm);
  writers._persist = (entry) => {
    guard();
    persist(entry);
  };
  writers._rewriteFile = () => {
    guard();
    rewrite();
  };
}
