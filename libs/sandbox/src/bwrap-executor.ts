import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, readlinkSync } from "node:fs";
import { dirname } from "node:path";
import type { ExecRequest, ExecutorOptions } from "./executor.js";
import { ProcessExecutor } from "./run-process.js";
import { noFallocateFilter } from "./seccomp.js";
import type { Mount, SandboxView } from "./view.js";

export interface BwrapOptions extends ExecutorOptions {
  /** Give commands the host's network (default: none, not even loopback to NATS). */
  network: boolean;
}

/**
 * True when bubblewrap is installed and can create its namespaces here; with `user` (a root
 * runner), when it can start a command as that uid and gid the way BwrapExecutor does.
 */
export function bwrapAvailable(user?: { uid: number; gid: number }): boolean {
  const args = user ? [...namespaceArgs(false, user), "--ro-bind", "/", "/", "--", ...dropTo(user), "true"] : ["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--", "true"];
  const r = spawnSync("bwrap", args, { stdio: "ignore", timeout: 10_000 });
  return r.status === 0;
}

/**
 * The namespaces and capabilities of a sandbox. An unprivileged runner: every namespace, the user
 * one included, and no capability (its commands are its own uid, mapped). A root runner: the same
 * without a user namespace (inside one, its commands would still be root to the kernel, owner of
 * every root-owned file), keeping only what `dropTo` needs to become `user` for good.
 */
function namespaceArgs(network: boolean, user?: { uid: number; gid: number }): string[] {
  if (!user) return ["--unshare-all", ...(network ? ["--share-net"] : []), "--die-with-parent", "--new-session", "--cap-drop", "ALL"];
  return [
    "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
    ...(network ? [] : ["--unshare-net"]),
    "--die-with-parent", "--new-session",
    "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP",
  ];
}

/**
 * The command's prefix inside a root runner's sandbox: setpriv (util-linux, from the bound /usr)
 * becomes `user` with no supplementary group, empties every capability set (the bounding set
 * too) and sets no_new_privs, so no setuid binary or file capability gives anything back.
 */
function dropTo(user: { uid: number; gid: number }): string[] {
  return ["setpriv", `--reuid=${user.uid}`, `--regid=${user.gid}`, "--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--"];
}

/** /dev/shm's size: POSIX shared memory and semaphores need a little, and it is memory too. */
const SHM_BYTES = 64 * 1024 * 1024;
/** A hidden directory is an empty tmpfs of one page, mounted read-only: nothing can be put there. */
const HIDDEN_TMPFS_BYTES = 4096;

/**
 * `--dir` for each directory above a mount point, searchable by all (0755): bwrap would make them
 * 0700, closed to a root runner's commands, which run as another uid. Existing ones are kept as they are.
 */
function parentDirs(path: string): string[] {
  const dirs: string[] = [];
  for (let d = dirname(path); d !== "/" && d !== "."; d = dirname(d)) dirs.unshift(d);
  return dirs.flatMap((d) => ["--perms", "0755", "--dir", d]);
}

function mountArgs(m: Mount): string[] {
  if (!existsSync(m.path)) return [];
  return [...parentDirs(m.path), ...mountOnly(m)];
}

function mountOnly(m: Mount): string[] {
  const st = lstatSync(m.path);
  // /bin -> usr/bin on merged-/usr systems: the same link inside, pointing at the bound /usr.
  if (st.isSymbolicLink()) return m.mode === "hidden" ? [] : ["--symlink", readlinkSync(m.path), m.path];
  if (m.mode === "hidden") return st.isDirectory() ? ["--size", String(HIDDEN_TMPFS_BYTES), "--tmpfs", m.path] : ["--ro-bind", "/dev/null", m.path];
  return [m.mode === "rw" ? "--bind" : "--ro-bind", m.path, m.path];
}

/** The bwrap command line for one view; exported for tests and `mom doctor`. */
export function bwrapArgs(view: SandboxView, o: { network: boolean; cwd?: string; tmpBytes?: number; seccompFd?: number; user?: { uid: number; gid: number } }): string[] {
  const tmp = o.tmpBytes ?? DEFAULT_TMP_BYTES;
  const mounts = view.mounts.flatMap(mountArgs);
  // Every tmpfs bwrap makes belongs to the sandbox's user: each is sized, and the ones that only
  // hide something are made read-only last (after the mounts inside them exist).
  const hiddenDirs = mounts.flatMap((a, i) => (a === "--tmpfs" ? [mounts[i + 1]!] : []));
  const cwd = o.cwd ?? view.channelDir;
  return [
    // Root in the sandbox would otherwise keep every capability inside its namespaces.
    ...namespaceArgs(o.network, o.user),
    ...(o.seccompFd !== undefined ? ["--seccomp", String(o.seccompFd)] : []),
    "--proc", "/proc",
    "--dev", "/dev",
    "--perms", "1777", "--size", String(Math.min(SHM_BYTES, tmp)), "--tmpfs", "/dev/shm",
    "--perms", "1777", "--size", String(tmp), "--tmpfs", "/tmp",
    ...mounts,
    ...hiddenDirs.flatMap((d) => ["--remount-ro", d]),
    "--remount-ro", "/dev",
    "--chdir", cwd,
  ];
}

/** Size of a command's private /tmp when the config says nothing. */
export const DEFAULT_TMP_BYTES = 256 * 1024 * 1024;

/**
 * Each command in its own bubblewrap sandbox: an empty root with the system read-only, the view's
 * mounts (own channel writable, other channels and the data dir hidden), a private sized /tmp,
 * new pid/ipc/uts/net (and, for an unprivileged runner, user) namespaces (no network unless
 * configured), no capabilities, fallocate refused, and --die-with-parent. With `user` (a root
 * runner) the command runs as that uid and gid. When the command's first process ends, the pid
 * namespace and everything left in it end too.
 */
export class BwrapExecutor extends ProcessExecutor<BwrapOptions> {
  readonly kind = "bwrap" as const;

  private readonly seccomp = noFallocateFilter();

  protected commandLine(req: ExecRequest) {
    const user = this.o.user;
    const args = bwrapArgs(this.view, { network: this.o.network, cwd: req.cwd, tmpBytes: this.o.limits?.tmpBytes, ...(this.seccomp && { seccompFd: 3 }), ...(user && { user }) });
    return { file: "bwrap", args: [...args, "--", ...(user ? dropTo(user) : []), "bash", "-c", req.command], cwd: "/", ...(this.seccomp && { fd3: this.seccomp }) };
  }
}
