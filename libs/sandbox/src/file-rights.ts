import { lstat } from "node:fs/promises";
import { dirname } from "node:path";
import { inside, type SandboxView } from "./view.js";

/**
 * Who a channel's commands are: the uid, gid and supplementary groups the kernel checks their
 * file access against. The file tools (read, write, edit, attach) check every file they touch
 * against the same identity, so they can reach exactly what bash can.
 */
export interface SandboxIdentity {
  uid: number;
  gid: number;
  groups: readonly number[];
}

export const R_OK = 4;
export const W_OK = 2;
export const X_OK = 1;

/** The kernel's rule for mode bits: the owner's bits for the owner, else the group's for a member, else the others'. */
export function mayAccess(st: { uid: number; gid: number; mode: number }, id: SandboxIdentity, want: number): boolean {
  if (id.uid === 0) return true; // only on the host executor run as root: root's rights are the command's too
  const bits = st.uid === id.uid ? (st.mode >> 6) & 7 : st.gid === id.gid || id.groups.includes(st.gid) ? (st.mode >> 3) & 7 : st.mode & 7;
  return (bits & want) === want;
}

/** The deepest mount of the view that holds `path` (what bwrap mounts there). */
function mountRoot(view: SandboxView, path: string): string | undefined {
  let best: string | undefined;
  for (const m of view.mounts) if (inside(m.path, path) && (!best || m.path.length >= best.length)) best = m.path;
  return best;
}

/**
 * The first directory on the way to `realPath` that `id` may not search (x), or undefined. Only
 * directories from the mount that shows `realPath` down count: inside bubblewrap the directories
 * above a mount point are bwrap's own, searchable by everyone (a data dir of mode 700 does not stop
 * the channel's commands from reaching their own directory through it).
 */
export async function unsearchableDir(view: SandboxView, id: SandboxIdentity, realPath: string): Promise<string | undefined> {
  if (id.uid === 0) return undefined;
  const root = mountRoot(view, realPath);
  if (!root) return undefined;
  const dirs: string[] = [];
  for (let d = dirname(realPath); inside(root, d); d = dirname(d)) {
    dirs.push(d);
    if (d === root || d === dirname(d)) break;
  }
  for (const d of dirs.reverse()) {
    const st = await lstat(d).catch(() => undefined);
    if (st && !mayAccess(st, id, X_OK)) return d;
  }
  return undefined;
}
