import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { cleanEnv, DEFAULT_EXEC_TIMEOUT_MS, type ExecRequest, type ExecResult, type Executor, type ExecutorKind, type ExecutorOptions } from "./executor.js";
import { type CommandCgroup, createCommandCgroup } from "./pids-cgroup.js";
import { killCommandTree } from "./process-tree.js";

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
}

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
  // A cgroup that cannot be made (removed, out of ids) costs the limit, not the command.
  const cgroup = o.pidsLimit && (await createCommandCgroup(o.pidsLimit.cgroupBase, o.pidsLimit.maxProcesses).catch(() => undefined));
  try {
    return await runIn(o, cgroup);
  } finally {
    // Everything in it is dead already; the kernel frees the directory once they are reaped.
    void cgroup?.remove();
  }
}

async function killAll(cgroup: CommandCgroup): Promise<void> {
  for (let round = 0; round < 100; round++) {
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

function runIn(o: RunProcessOptions, cgroup: CommandCgroup | undefined): Promise<ExecResult> {
  // Without a cgroup, every process of the command is found again by this variable in
  // /proc/<pid>/environ, even after `setsid` and a double fork (process-tree.ts).
  const marker = `MOM_EXEC_ID=${randomUUID()}`;
  const env = { ...o.env, MOM_EXEC_ID: marker.slice("MOM_EXEC_ID=".length) };
  return new Promise<ExecResult>((resolve, reject) => {
    // The process joins its cgroup before it becomes the command, so not one fork escapes the count.
    const [file, args] = cgroup ? ["/bin/sh", ["-c", 'echo $$ > "$0" && exec "$@"', cgroup.procsFile, o.file, ...o.args]] : [o.file, o.args];
    const child = spawn(file, args, { cwd: o.cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let outputBytes = 0;
    let stopped: ExecResult["stopped"];
    let exitCode: number | null = null;
    let killing: Promise<void> | undefined;
    // Kills everything the command started (on abort, timeout, the output cap, and after it exits):
    // the cgroup knows every process exactly; without one, the marker finds them.
    const kill = () => (killing ??= cgroup ? killAll(cgroup) : child.pid ? killCommandTree(child.pid, marker).catch(() => {}) : Promise.resolve());
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
    const onAbort = () => stop("aborted");
    o.signal?.addEventListener("abort", onAbort, { once: true });

    let settled = false;
    const finish = async () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      o.signal?.removeEventListener("abort", onAbort);
      await kill();
      resolve({ exitCode: stopped ? null : exitCode, ...(stopped && { stopped }), outputBytes });
    };
    child.on("error", (err) => {
      clearTimeout(timer);
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

/** An executor whose commands are processes the runner spawns (host, bwrap): only the command line differs. */
export abstract class ProcessExecutor<O extends ExecutorOptions> implements Executor {
  abstract readonly kind: ExecutorKind;
  readonly view: O["view"];
  readonly maxOutputBytes: number;

  constructor(protected readonly o: O) {
    this.view = o.view;
    this.maxOutputBytes = o.maxOutputBytes;
  }

  /** What to spawn for a request: file, arguments, working directory. */
  protected abstract commandLine(req: ExecRequest): { file: string; args: string[]; cwd: string };

  exec(req: ExecRequest): Promise<ExecResult> {
    const { file, args, cwd } = this.commandLine(req);
    return runCommand(this.o, req, file, args, cwd);
  }
}

function runCommand(o: ExecutorOptions, req: ExecRequest, file: string, args: string[], cwd: string): Promise<ExecResult> {
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
  });
}
