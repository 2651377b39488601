import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, readlinkSync } from "node:fs";
import type { ExecRequest, ExecutorOptions } from "./executor.js";
import { ProcessExecutor } from "./run-process.js";
import type { Mount, SandboxView } from "./view.js";

export interface BwrapOptions extends ExecutorOptions {
  /** Give commands the host's network (default: none, not even loopback to NATS). */
  network: boolean;
}

/** True when bubblewrap is installed and can create its namespaces here. */
export function bwrapAvailable(): boolean {
  const r = spawnSync("bwrap", ["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--", "true"], { stdio: "ignore", timeout: 10_000 });
  return r.status === 0;
}

function mountArgs(m: Mount): string[] {
  if (!existsSync(m.path)) return [];
  const st = lstatSync(m.path);
  // /bin -> usr/bin on merged-/usr systems: the same link inside, pointing at the bound /usr.
  if (st.isSymbolicLink()) return m.mode === "hidden" ? [] : ["--symlink", readlinkSync(m.path), m.path];
  if (m.mode === "hidden") return st.isDirectory() ? ["--tmpfs", m.path] : ["--ro-bind", "/dev/null", m.path];
  return [m.mode === "rw" ? "--bind" : "--ro-bind", m.path, m.path];
}

/** The bwrap command line for one view; exported for tests and `mom doctor`. */
export function bwrapArgs(view: SandboxView, o: { network: boolean; cwd?: string }): string[] {
  return [
    "--unshare-all",
    ...(o.network ? ["--share-net"] : []),
    "--die-with-parent",
    "--new-session",
    // Root in the sandbox would otherwise keep every capability inside its namespaces.
    "--cap-drop", "ALL",
    "--proc", "/proc",
    "--dev", "/dev",
    "--tmpfs", "/tmp",
    ...view.mounts.flatMap(mountArgs),
    "--chdir", o.cwd ?? view.channelDir,
  ];
}

/**
 * Each command in its own bubblewrap sandbox: an empty root with the system read-only, the view's
 * mounts (own channel writable, other channels and the data dir hidden), a private /tmp, new
 * pid/ipc/uts/net/user namespaces (no network unless configured) and --die-with-parent. When
 * the command's first process ends, the pid namespace and everything left in it end too.
 */
export class BwrapExecutor extends ProcessExecutor<BwrapOptions> {
  readonly kind = "bwrap" as const;

  protected commandLine(req: ExecRequest) {
    return { file: "bwrap", args: [...bwrapArgs(this.view, { network: this.o.network, cwd: req.cwd }), "--", "bash", "-c", req.command], cwd: "/" };
  }
}
