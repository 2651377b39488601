import { cleanEnv, DEFAULT_EXEC_TIMEOUT_MS, type ExecRequest, type ExecResult, type Executor } from "./executor.js";
import { runProcess } from "./run-process.js";
import type { SandboxView } from "./view.js";

export interface ExecutorOptions {
  view: SandboxView;
  /** Variables the config gives every command, on top of PATH, HOME and LANG. */
  env: Record<string, string>;
  maxOutputBytes: number;
  /** Caps the processes of one command where a pids cgroup can be made (see pids-cgroup.ts). */
  pidsLimit?: { cgroupBase: string; maxProcesses: number };
}

/**
 * Commands run directly on the runner's host, as the runner's user: for development only. They
 * still get a clean environment, the output cap, the timeout and the whole-tree kill; the file
 * tools still keep to the view. Nothing stops bash itself from reading any file the runner can.
 */
export class HostExecutor implements Executor {
  readonly kind = "host" as const;
  readonly view: SandboxView;
  readonly maxOutputBytes: number;

  constructor(private readonly o: ExecutorOptions) {
    this.view = o.view;
    this.maxOutputBytes = o.maxOutputBytes;
  }

  exec(req: ExecRequest): Promise<ExecResult> {
    return runProcess({
      file: "bash",
      args: ["-c", req.command],
      env: cleanEnv(this.view.channelDir, this.o.env),
      cwd: req.cwd ?? this.view.channelDir,
      onData: req.onData,
      signal: req.signal,
      timeoutMs: req.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS,
      maxOutputBytes: this.o.maxOutputBytes,
      pidsLimit: this.o.pidsLimit,
    });
  }
}
