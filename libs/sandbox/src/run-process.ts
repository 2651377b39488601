import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { cleanEnv, type CommandLimits, DEFAULT_EXEC_TIMEOUT_MS, type ExecRequest, type ExecResult, type Executor, type ExecutorKind, type ExecutorOptions } from "./executor.js";
import { measureDir } from "./disk-usage.js";
import { type CgroupLimits, type CommandCgroup, createCommandCgroup } from "./pids-cgroup.js";
import { hasTool } from "./tools-on-path.js";
import { killCommandTree, killGroup, killMarkedProcesses } from "./process-tree.js";

export interface RunProcessOptions {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  onData?: (chunk: Buffer) => void;
  signal?: AbortSignal;
  timeoutMs: number;
  maxOutputBytes: number;
  /** Where to put the command in a cgroup of its own with at most `maxProcesses` processes (see pids-cgroup.ts). */
  pidsLimit?: { cgroupBase: string; maxProcesses: number };
  limits?: CommandLimits;
  /** Written to the command's fd 3 (bwrap's --seccomp 3), then closed. */
  fd3?: Buffer;
  /** The marker's value (MOM_EXEC_ID); default a fresh uuid. */
  execId?: string;
}

/** How often the channel's directory is measured while a command runs (at least; a slow walk is spaced out more). */
const DISK_CHECK_MS = 250;
// What a process killed by SIGXFSZ exits with, as a shell reports it.
const XFSZ_EXIT = 128 + 25;

/** After the main process exits, how long its pipes may stay open before they are cut. */
const PIPE_GRACE_MS = 500;

/**
 * Runs one process and streams its stdout and stderr to `onData` as they come, never holding
 * more than one chunk: at `maxOutputBytes` the rest is dropped and the command is killed, as it
 * is on timeout or abort. Whatever the command left running (background jobs, `setsid`
 * daemons) is killed when it exits, so nothing outlives the call.
 */
export async function runProcess(o: RunProcessOptions): Promise<ExecResult> {
  if (o.signal?.aborted) return { exitCode: null, stopped: "aborted", outputBytes: 0 };
  const limits: CgroupLimits = { ...o.limits?.cgroups };
  if (o.pidsLimit && !limits.pids) limits.pids = { base: { dir: o.pidsLimit.cgroupBase, version: o.pidsLimit.cgroupBase.startsWith("/sys/fs/cgroup/pids") ? 1 : 2 }, maxProcesses: o.pidsLimit.maxProcesses };
  // A cgroup that cannot be made (removed, out of ids) costs the limit, not the command.
  const cgroup = limits.pids || limits.memory ? await createCommandCgroup(limits).catch(() => undefined) : undefined;
  try {
    const result = await runIn(o, cgroup);
    if (cgroup && (await cgroup.oomKills()) > 0) result.hit ??= "memory";
    if (!result.hit && !result.stopped && o.limits?.fileBytes && (result.exitCode === XFSZ_EXIT || result.fileAtLimit)) result.hit = "file-size";
    delete result.fileAtLimit;
    return result;
  } finally {
    // Everything in it is dead already; the kernel frees the directory once they are reaped.
    void cgroup?.remove();
  }
}

async function killAll(cgroup: CommandCgroup): Promise<void> {
  // Bounded by time, not rounds: on a busy host a fork bomb at its pids limit refills the slots
  // its killed processes free for longer than a fixed number of quick rounds.
  const deadline = Date.now() + 5000;
  for (let round = 0; Date.now() < deadline; round++) {
    const pids = await cgroup.pids();
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    // Processes that are merely dying still count; re-check at once a few times, then give them time.
    if (round >= 3) await new Promise((r) => setTimeout(r, 5));
  }
}

function runIn(o: RunProcessOptions, cgroup: CommandCgroup | undefined): Promise<ExecResult & { fileAtLimit?: boolean }> {
  // Without a cgroup, every process of the command is found again by this variable in
  // /proc/<pid>/environ, even after `setsid` and a double fork (process-tree.ts).
  const marker = `MOM_EXEC_ID=${o.execId ?? randomUUID()}`;
  const env = { ...o.env, MOM_EXEC_ID: marker.slice("MOM_EXEC_ID=".length) };
  return new Promise<ExecResult & { fileAtLimit?: boolean }>((resolve, reject) => {
    // The process joins its cgroups before it becomes the command, so not one fork escapes the
    // count; then its rlimits are set (prlimit: soft and hard, which an unprivileged process
    // cannot raise again), then the command.
    let argv = [o.file, ...o.args];
    const rl = [...(o.limits?.fileBytes ? [`--fsize=${o.limits.fileBytes}`] : []), ...(o.limits?.dataBytes && !cgroup?.limitsMemory ? [`--data=${o.limits.dataBytes}`] : [])];
    if (rl.length && hasTool("prlimit")) argv = ["prlimit", ...rl, "--", ...argv];
    if (cgroup) {
      const joins = cgroup.procsFiles.map((_, i) => `echo $$ > "$${i + 1}"`).join(" && ");
      argv = ["/bin/sh", "-c", `${joins} && shift ${cgroup.procsFiles.length} && exec "$@"`, "sh", ...cgroup.procsFiles, ...argv];
    }
    const child = spawn(argv[0]!, argv.slice(1), { cwd: o.cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe", ...(o.fd3 ? (["pipe"] as const) : [])] });
    if (o.fd3) {
      const fd3 = child.stdio[3] as NodeJS.WritableStream & { on(e: "error", f: () => void): void };
      fd3.on("error", () => {}); // the process died before reading it: its exit says why
      fd3.end(o.fd3);
    }
    let outputBytes = 0;
    let stopped: ExecResult["stopped"];
    let exitCode: number | null = null;
    let killing: Promise<void> | undefined;
    let diskBytes: number | undefined;
    // Kills everything the command started (on abort, timeout, the output cap, and after it exits):
    // the cgroup knows every process exactly; without one, the marker finds them. A kill is made
    // once, so its process group goes too: a command killed before it joined its cgroup (an abort
    // at once) is only there, and it has started nothing yet.
    const kill = () => (killing ??= !child.pid ? Promise.resolve() : cgroup ? (killGroup(child.pid), killAll(cgroup)) : killCommandTree(child.pid, marker).catch(() => {}));
    const stop = (why: NonNullable<ExecResult["stopped"]>) => {
      stopped ??= why;
      void kill();
    };

    const onChunk = (chunk: Buffer) => {
      if (stopped === "output") return;
      const room = o.maxOutputBytes - outputBytes;
      if (chunk.length > room) {
        if (room > 0) o.onData?.(chunk.subarray(0, room));
        outputBytes += Math.max(room, 0);
        stop("output");
        child.stdout?.destroy();
        child.stderr?.destroy();
        return;
      }
      outputBytes += chunk.length;
      o.onData?.(chunk);
    };
    child.stdout!.on("data", onChunk);
    child.stderr!.on("data", onChunk);

    const timer = setTimeout(() => stop("timeout"), o.timeoutMs);
    const disk = o.limits?.disk && watchDisk(o.limits.disk, o.limits.fileBytes, (bytes) => {
      diskBytes = bytes;
      stop("disk");
    });
    const onAbort = () => stop("aborted");
    o.signal?.addEventListener("abort", onAbort, { once: true });
    // An abort while the cgroup was being made fired before anyone listened.
    if (o.signal?.aborted) onAbort();

    let settled = false;
    const finish = async () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      o.signal?.removeEventListener("abort", onAbort);
      await kill();
      // A write faster than the checks ends before one sees it: measure once more.
      const last = disk ? await disk.finish() : undefined;
      if (last?.over !== undefined) diskBytes ??= last.over;
      resolve({
        exitCode: stopped ? null : exitCode,
        ...(stopped && { stopped }),
        ...(!stopped && last?.over !== undefined && { hit: "disk" as const }),
        ...(diskBytes !== undefined && { diskBytes }),
        ...(last?.fileAtLimit && { fileAtLimit: true }),
        outputBytes,
      });
    };
    child.on("error", (err) => {
      clearTimeout(timer);
      void disk?.finish();
      o.signal?.removeEventListener("abort", onAbort);
      settled = true;
      reject(err);
    });
    child.on("exit", (code) => {
      exitCode = code;
      // Background processes that kept the pipes open go now; the pipes then close by themselves.
      void kill();
      setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        void finish();
      }, PIPE_GRACE_MS).unref();
    });
    child.on("close", () => void finish());
  });
}

/**
 * Measures the channel's directory every DISK_CHECK_MS (or five times as long as a measurement
 * took) while a command runs; `over` is called once when it holds more than `maxBytes` and more
 * than when the command started (so a command that only deletes is never stopped). `finish`
 * stops the watch and measures once more: `over`, the bytes, when the directory grew past the
 * limit; `fileAtLimit` when a file written since the start is as large as the per-file limit
 * (a process was stopped writing it, even if the command's own exit code does not say so).
 */
function watchDisk(d: NonNullable<CommandLimits["disk"]>, fileBytes: number | undefined, over: (bytes: number) => void): { finish(): Promise<{ over?: number; fileAtLimit: boolean }> } {
  const exclude = new Set(d.exclude);
  const since = Date.now() - 1000; // file times are coarser than the clock
  let done = false;
  let fired = false;
  let timer: NodeJS.Timeout | undefined;
  const started = measureDir(d.dir, exclude);
  const check = async () => {
    const base = (await started).bytes;
    const now = await measureDir(d.dir, exclude, fileBytes);
    return { over: now.bytes > d.maxBytes && now.bytes > base ? now.bytes : undefined, fileAtLimit: (now.newestBig ?? 0) >= since };
  };
  const round = async () => {
    const t0 = Date.now();
    const { over: bytes } = await check();
    if (done) return;
    if (bytes !== undefined) {
      fired = true;
      over(bytes);
      return;
    }
    timer = setTimeout(() => void round(), Math.max(DISK_CHECK_MS, 5 * (Date.now() - t0)));
  };
  void started.then(() => {
    if (!done) timer = setTimeout(() => void round(), DISK_CHECK_MS);
  });
  return {
    async finish() {
      done = true;
      clearTimeout(timer);
      const last = await check();
      return fired ? { fileAtLimit: last.fileAtLimit } : last;
    },
  };
}

/** An executor whose commands are processes the runner spawns (host, bwrap): only the command line differs. */
export abstract class ProcessExecutor<O extends ExecutorOptions> implements Executor {
  abstract readonly kind: ExecutorKind;
  readonly view: O["view"];
  readonly maxOutputBytes: number;

  constructor(protected readonly o: O) {
    this.view = o.view;
    this.maxOutputBytes = o.maxOutputBytes;
  }

  get limits() {
    return this.o.limits;
  }

  /** What to spawn for a request: file, arguments, working directory, and bytes for its fd 3. */
  protected abstract commandLine(req: ExecRequest): { file: string; args: string[]; cwd: string; fd3?: Buffer };

  async exec(req: ExecRequest): Promise<ExecResult> {
    await this.o.prepare?.();
    const { file, args, cwd, fd3 } = this.commandLine(req);
    return runCommand(this.o, req, file, args, cwd, fd3);
  }

  /** Every process on this host carrying the marker: bwrap and bash pass the environment down. */
  async killLeftovers(execId: string): Promise<void> {
    await killMarkedProcesses(`MOM_EXEC_ID=${execId}`);
  }
}

function runCommand(o: ExecutorOptions, req: ExecRequest, file: string, args: string[], cwd: string, fd3?: Buffer): Promise<ExecResult> {
  return runProcess({
    file,
    args,
    env: cleanEnv(o.view.channelDir, o.env),
    cwd,
    onData: req.onData,
    signal: req.signal,
    timeoutMs: req.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS,
    maxOutputBytes: o.maxOutputBytes,
    pidsLimit: o.pidsLimit,
    limits: o.limits,
    fd3,
    execId: req.execId,
  });
}
