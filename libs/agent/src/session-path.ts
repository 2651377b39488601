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
