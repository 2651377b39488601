import type { SandboxView } from "./view.js";

export type ExecutorKind = "host" | "bwrap" | "docker";

export interface ExecRequest {
  /** Run as `bash -c <command>`, exactly as given. */
  command: string;
  /** Default: the channel's directory. */
  cwd?: string;
  /** Output chunks (stdout and stderr interleaved) as they come. */
  onData?: (chunk: Buffer) => void;
  signal?: AbortSignal;
  /** Default DEFAULT_EXEC_TIMEOUT_MS. */
  timeoutMs?: number;
}

export interface ExecResult {
  /** null when the command was stopped or died of a signal. */
  exitCode: number | null;
  /** Set when mom stopped the command: more output than the cap, its timeout, or an abort. */
  stopped?: "output" | "timeout" | "aborted";
  /** Bytes handed to onData (at most the cap). */
  outputBytes: number;
}

/**
 * Where one channel's commands run. Every tool that touches the OS for the agent goes through
 * one: bash runs `exec`; read, write, edit, attach and scratch files check their paths
 * against `view` (see confined-files.ts).
 */
export interface Executor {
  readonly kind: ExecutorKind;
  readonly view: SandboxView;
  /** Most output bytes one command may produce, and most bytes one file read returns. */
  readonly maxOutputBytes: number;
  exec(req: ExecRequest): Promise<ExecResult>;
}

export interface ExecutorOptions {
  view: SandboxView;
  /** Variables the config gives every command, on top of PATH, HOME and LANG. */
  env: Record<string, string>;
  maxOutputBytes: number;
  /** Caps the processes of one command where a pids cgroup can be made (see pids-cgroup.ts). */
  pidsLimit?: { cgroupBase: string; maxProcesses: number };
}

export const DEFAULT_EXEC_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

/** What a command sees: a fixed PATH, HOME and LANG, plus the variables the config names. */
export function cleanEnv(home: string, extra: Record<string, string>): Record<string, string> {
  return {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    HOME: home,
    LANG: "C.UTF-8",
    ...extra,
  };
}

/** A line the model reads at the end of a command mom stopped. */
export function stoppedNote(result: ExecResult, maxOutputBytes: number, timeoutMs: number): string | undefined {
  switch (result.stopped) {
    case "output":
      return `[mom stopped the command: it printed more than ${Math.round(maxOutputBytes / 1024 / 1024)} MB, the output cap. Write big output to a file under scratch/ and read it in parts.]`;
    case "timeout":
      return `[mom stopped the command: it ran longer than ${Math.round(timeoutMs / 1000)} s.]`;
    case "aborted":
      return "[the command was aborted]";
    default:
      return undefined;
  }
}
