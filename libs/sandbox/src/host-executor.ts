import type { ExecRequest, ExecutorOptions } from "./executor.js";
import { ProcessExecutor } from "./run-process.js";

/**
 * Commands run directly on the runner's host, as the runner's user: for development only. They
 * still get a clean environment, the output cap, the timeout and the whole-tree kill; the file
 * tools still keep to the view. Nothing stops bash itself from reading any file the runner can.
 */
export class HostExecutor extends ProcessExecutor<ExecutorOptions> {
  readonly kind = "host" as const;

  protected commandLine(req: ExecRequest) {
    return { file: "bash", args: ["-c", req.command], cwd: req.cwd ?? this.view.channelDir };
  }
}
