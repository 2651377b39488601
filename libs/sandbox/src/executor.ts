import type { CgroupLimits } from "./pids-cgroup.js";
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
  /**
   * The value of the command's marker variable MOM_EXEC_ID (default: a fresh uuid). A caller that
   * records it can find what is left of the command after its runner died (killLeftovers).
   */
  execId?: string;
}

export interface ExecResult {
  /** null when the command was stopped or died of a signal. */
  exitCode: number | null;
  /** Set when mom stopped the command: more output than the cap, its timeout, an abort, or the channel's disk limit. */
  stopped?: "output" | "timeout" | "aborted" | "disk";
  /**
   * A limit the command ran into, whether or not that ended it: `memory` (the kernel killed a
   * process of it at the memory limit), `file-size` (a file reached the per-file limit: SIGXFSZ),
   * `disk` (the channel's directory is over its size limit).
   */
  hit?: "memory" | "file-size" | "disk";
  /** With `hit`/`stopped` "disk": how many bytes the channel's directory holds. */
  diskBytes?: number;
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
  /** The per-command limits in force, for the notes the model reads. */
  readonly limits?: CommandLimits;
  exec(req: ExecRequest): Promise<ExecResult>;
  /**
   * Kills every process still carrying the marker `execId` (ExecRequest.execId): what a command
   * started by a runner that died left running. Sees only this host (host, bwrap) or the
   * channel's container (docker).
   */
  killLeftovers?(execId: string): Promise<void>;
}

export interface ExecutorOptions {
  view: SandboxView;
  /** Variables the config gives every command, on top of PATH, HOME and LANG. */
  env: Record<string, string>;
  maxOutputBytes: number;
  /** Caps the processes of one command where a pids cgroup can be made (see pids-cgroup.ts). */
  pidsLimit?: { cgroupBase: string; maxProcesses: number };
  /** Memory, file-size, /tmp and disk limits of each command (see limits.ts). */
  limits?: CommandLimits;
  /** Run the command as this user: set when the runner is root (bwrap only; see docs/sandbox.md). */
  user?: { uid: number; gid: number };
  /** Called before each command (hands what the runner made in the channel's directory to `user`). */
  prepare?: () => Promise<void>;
}

/** What bounds one command besides its processes; what is unset is not limited. */
export interface CommandLimits {
  /** The command's own cgroups (memory, and pids when given here). */
  cgroups?: CgroupLimits;
  /** Memory in bytes, for the note the model reads (enforced by cgroups.memory or dataBytes). */
  memoryBytes?: number;
  /** RLIMIT_DATA of each process, where no memory cgroup can be made. */
  dataBytes?: number;
  /** RLIMIT_FSIZE: the largest file any process of the command may write. */
  fileBytes?: number;
  /** bwrap: the size of the command's private /tmp (a tmpfs); /dev/shm gets at most 64 MiB of it. */
  tmpBytes?: number;
  /** The channel's directory may hold at most `maxBytes` (runner files excluded): checked while the command runs. */
  disk?: { dir: string; maxBytes: number; exclude: readonly string[] };
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
export function stoppedNote(result: ExecResult, maxOutputBytes: number, timeoutMs: number, limits?: CommandLimits): string | undefined {
  switch (result.stopped) {
    case "output":
      return `[mom stopped the command: it printed more than ${Math.round(maxOutputBytes / 1024 / 1024)} MB, the output cap. Write big output to a file under scratch/ and read it in parts.]`;
    case "timeout":
      return `[mom stopped the command: it ran longer than ${Math.round(timeoutMs / 1000)} s.]`;
    case "aborted":
      return "[the command was aborted]";
    case "disk":
      return `[mom stopped the command: this channel's directory grew to ${mb(result.diskBytes ?? 0)} MB, over its disk limit${limits?.disk ? ` of ${mb(limits.disk.maxBytes)} MB` : ""}. Delete files you no longer need (rm) before writing more.]`;
    default:
      break;
  }
  switch (result.hit) {
    case "memory":
      return `[mom's sandbox killed a process of this command: it used more than ${limits?.memoryBytes ? `${mb(limits.memoryBytes)} MB of memory, ` : "its memory limit, "}the per-command memory limit. Work on smaller pieces of data.]`;
    case "file-size":
      return `[a file of this command reached the per-file size limit${limits?.fileBytes ? ` of ${mb(limits.fileBytes)} MB` : ""} and the process writing it was stopped (File size limit exceeded).]`;
    case "disk":
      return `[this channel's directory now holds ${mb(result.diskBytes ?? 0)} MB, over its disk limit${limits?.disk ? ` of ${mb(limits.disk.maxBytes)} MB` : ""}: the next command that adds to it will be stopped. Delete files you no longer need (rm).]`;
    default:
      return undefined;
  }
}

function mb(bytes: number): number {
  return Math.round(bytes / 1024 / 1024);
}
