import { lstat } from "node:fs/promises";
import { join } from "node:path";
import { someEntries } from "./dir-entries.js";

/** Most entries one measurement looks at: a directory with more is counted up to here. */
export const MAX_USAGE_ENTRIES = 200_000;

/**
 * Bytes the files under `dir` take on disk (allocated blocks, so a sparse file counts what it
 * holds), each hard-linked file once, `exclude` (absolute paths) left out. Never follows a
 * symlink (lstat), never opens a file; a walk is bounded by MAX_USAGE_ENTRIES.
 */
export async function diskUsage(dir: string, exclude: ReadonlySet<string> = new Set()): Promise<number> {
  return (await measureDir(dir, exclude)).bytes;
}

/** diskUsage, plus the newest modification time among the files that are at least `bigBytes` long. */
export async function measureDir(dir: string, exclude: ReadonlySet<string> = new Set(), bigBytes = Infinity, maxEntries = MAX_USAGE_ENTRIES): Promise<{ bytes: number; newestBig?: number }> {
  let newestBig: number | undefined;
  let total = 0;
  let seen = 0;
  const linked = new Set<string>();
  const stack = [dir];
  while (stack.length > 0 && seen < maxEntries) {
    const d = stack.pop()!;
    const paths = (await someEntries(d, maxEntries - seen)).map((n) => join(d, n)).filter((p) => !exclude.has(p));
    seen += paths.length;
    for (let at = 0; at < paths.length; at += 1000) {
      const batch = paths.slice(at, at + 1000);
      const stats = await Promise.all(batch.map((p) => lstat(p).catch(() => undefined)));
      stats.forEach((st, i) => {
        if (!st) return;
        if (st.isDirectory()) stack.push(batch[i]!);
        else if (st.size >= bigBytes) newestBig = Math.max(newestBig ?? 0, st.mtimeMs);
        else if (st.nlink > 1) {
          const key = `${st.dev}:${st.ino}`;
          if (linked.has(key)) return;
          linked.add(key);
        }
        total += st.blocks * 512;
      });
    }
  }
  return { bytes: total, ...(newestBig !== undefined && { newestBig }) };
}
