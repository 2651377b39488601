import { closeSync, constants, lstatSync, mkdirSync, openSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type Dockerode from "dockerode";
import { BwrapExecutor, bwrapAvailable } from "./bwrap-executor.js";
import { DockerExecutor } from "./docker-executor.js";
import { ConfinedFiles } from "./confined-files.js";
import { DEFAULT_MAX_OUTPUT_BYTES, type Executor, type ExecutorKind } from "./executor.js";
import { HostExecutor } from "./host-executor.js";
import { pidsCgroupBase } from "./pids-cgroup.js";
import { channelView, OPERATOR_EVENTS_DIR, sharedContainerView } from "./view.js";

/** config.json `sandbox`, with `env:` references already resolved by the runner. */
export interface SandboxSettings {
  type: "auto" | "host" | "bwrap" | "docker";
  /** docker: the image of the channels' containers (must have bash). */
  image?: string;
  /** docker: the engine's socket. Default /var/run/docker.sock. */
  socketPath?: string;
  memoryMb?: number;
  cpus?: number;
  /** docker: a container per channel (default) or one for the whole workspace. */
  scope?: "channel" | "workspace";
  /** bwrap: give commands the host's network. Default false. */
  network?: boolean;
  /** Variables every command gets on top of PATH, HOME and LANG. */
  env?: Record<string, string>;
  /** Workspace-relative paths every channel sees; writable only by `sharedWriters`. Default DEFAULT_SHARED. */
  shared?: string[];
  /** Qualified channel ids (`slack/C0123`) that may write the shared paths; the others see them read-only. */
  sharedWriters?: string[];
  maxOutputBytes?: number;
  /** Most processes one command may have at once (a fork bomb stops there). Default DEFAULT_MAX_PROCESSES. */
  maxProcesses?: number;
}

export const DEFAULT_MAX_PROCESSES = 512;

/**
 * What every channel sees besides its own directory: global memory and skills. Read-only but for
 * the channels in `sharedWriters`. (The operator's events/ is not shared: a channel schedules in
 * its own events/ directory, docs/scheduler.md.)
 */
export const DEFAULT_SHARED = ["MEMORY.md", "skills"];

/** One channel's executor and the file access that goes with it. */
export interface ChannelSandbox {
  executor: Executor;
  files: ConfinedFiles;
  /** For the system prompt: what the agent's commands can and cannot do. */
  description: string;
  /** This channel may write the shared paths (global memory, skills): it is in `sandbox.sharedWriters`. */
  sharedWritable: boolean;
}

/**
 * The workspace's sandbox, chosen once at start: `auto` is bwrap where bubblewrap works, else
 * the host. Hands each channel an executor whose view shows that channel only.
 */
export class Sandbox {
  readonly kind: ExecutorKind;
  /** Why `auto` chose what it chose, for the start-up log and `mom doctor`. */
  readonly reason: string;
  /** Where per-command pids cgroups are made; undefined when this process may not make any. */
  readonly cgroupBase = pidsCgroupBase();

  constructor(
    private readonly settings: SandboxSettings,
    private readonly paths: { dataDir: string; workspaceDir: string },
    hasBwrap: () => boolean = bwrapAvailable,
  ) {
    if (settings.type === "auto") {
      const ok = hasBwrap();
      this.kind = ok ? "bwrap" : "host";
      this.reason = ok ? "auto: bubblewrap works here" : "auto: bubblewrap is not installed or cannot create namespaces here, so commands run on the host";
    } else {
      // Refusing to start beats failing every command later with bwrap's own error.
      if (settings.type === "docker" && !settings.image) throw new Error('sandbox.type "docker" needs sandbox.image');
      if (settings.type === "bwrap" && !hasBwrap()) {
        throw new Error('sandbox.type is "bwrap" but bubblewrap is not installed or cannot create namespaces here: install it (apt-get install -y bubblewrap), allow user namespaces, or use "auto"');
      }
      this.kind = settings.type;
      this.reason = `configured: sandbox.type ${settings.type}`;
    }
  }

  private client?: Dockerode;

  // Loaded on first use: dockerode's ssh2 sets up 16 MB of WebAssembly memory on import, which a
  // runner that sandboxes with bubblewrap would carry for nothing.
  private docker(): Dockerode {
    if (!this.client) {
      const Client = createRequire(import.meta.url)("dockerode") as typeof Dockerode;
      this.client = new Client({ socketPath: this.settings.socketPath ?? "/var/run/docker.sock" });
    }
    return this.client;
  }

  get shared(): string[] {
    return this.settings.shared ?? DEFAULT_SHARED;
  }

  /** Whether the channel (qualified id) may write the shared paths. */
  sharedWriter(channel: string | undefined): boolean {
    return channel !== undefined && (this.settings.sharedWriters ?? []).includes(channel);
  }

  /**
   * `runnerFiles`: files in the channel's directory that only the runner writes (log.jsonl,
   * context.jsonl, receipts.jsonl). They are created when missing and are read-only to the
   * channel's tools, so a command can neither change them nor swap in a symlink to another
   * channel's file for the runner to read or append to. `channel`: the qualified channel id, which
   * decides whether the shared paths are writable (`sharedWriters`); without it they are read-only.
   */
  forChannel(channelDir: string, runnerFiles: string[] = [], channel?: string): ChannelSandbox {
    mkdirSync(channelDir, { recursive: true });
    this.ensureShared();
    for (const f of runnerFiles) touch(f);
    const sharedWritable = this.sharedWriter(channel);
    const view = channelView({ ...this.paths, channelDir, shared: this.shared, sharedWritable, readOnly: runnerFiles });
    const o = {
      view,
      env: this.settings.env ?? {},
      maxOutputBytes: this.settings.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      ...(this.cgroupBase && { pidsLimit: { cgroupBase: this.cgroupBase, maxProcesses: this.settings.maxProcesses ?? DEFAULT_MAX_PROCESSES } }),
    };
    const network = this.settings.network ?? false;
    const executor =
      this.kind === "bwrap"
        ? new BwrapExecutor({ ...o, network })
        : this.kind === "docker"
          ? new DockerExecutor({
              ...o,
              network,
              docker: this.docker(),
              image: this.settings.image!,
              workspaceDir: this.paths.workspaceDir,
              maxProcesses: this.settings.maxProcesses ?? DEFAULT_MAX_PROCESSES,
              ...(this.settings.scope === "workspace" && { scope: "workspace" as const, sharedView: sharedContainerView({ ...this.paths, shared: this.shared }) }),
              limits: { ...(this.settings.memoryMb && { memoryBytes: this.settings.memoryMb * 1024 * 1024 }), ...(this.settings.cpus && { cpus: this.settings.cpus }) },
            })
          : new HostExecutor(o);
    return { executor, files: new ConfinedFiles(view, o.maxOutputBytes), description: this.describe(sharedWritable), sharedWritable };
  }

  /** What stops commands from running, found now (the docker engine or image), or undefined. */
  async check(): Promise<string | undefined> {
    if (this.kind !== "docker") return undefined;
    const docker = this.docker();
    try {
      await docker.ping();
    } catch (err) {
      return `no Docker engine at ${this.settings.socketPath ?? "/var/run/docker.sock"}: ${(err as Error).message}`;
    }
    try {
      await docker.getImage(this.settings.image!).inspect();
    } catch {
      return `the Docker engine has no image ${this.settings.image} (mom never pulls one: docker pull or docker import it first)`;
    }
    return undefined;
  }

  /**
   * One line for the system prompt: what the agent's commands can and cannot do. `sharedWritable`:
   * said to a channel in `sharedWriters` (the shared paths are writable for it).
   */
  describe(sharedWritable = false): string {
    const list = this.shared.join(", ");
    if (this.kind === "host") {
      return `none — commands run directly on the runner's host as the runner's user (development mode). The file tools still only reach this channel's directory, the shared workspace files (${list}${sharedWritable ? "" : ", read-only"}) and the system.`;
    }
    const net = this.settings.network ? "with the host's network" : "without network";
    const shared = sharedWritable ? `the shared workspace files (${list}) writable` : `the shared workspace files (${list}) read-only (only the operator and the channels in sandbox.sharedWriters change them)`;
    if (this.kind === "docker" && this.settings.scope === "workspace") {
      return `docker — commands run in one container shared by every channel of this workspace (image ${this.settings.image}), starting in this channel's directory: the channels' directories writable, the shared workspace files (${list}) and the rest of the workspace read-only, a read-only root with a private /tmp shared by the channels, ${net}. Other channels' directories are reachable from bash; the file tools still reach only this channel's. Background processes end with the command.`;
    }
    if (this.kind === "docker") {
      return `docker — commands run in this channel's own container (image ${this.settings.image}): this channel's directory writable, ${shared}, the rest of the workspace read-only, other channels hidden, a read-only root with a private /tmp, ${net}. Background processes end with the command.`;
    }
    return `bubblewrap — each command runs in a fresh sandbox: this channel's directory writable, ${shared}, the rest of the workspace and the system read-only, other channels hidden, a private /tmp emptied after every command, ${net}. Background processes end with the command.`;
  }

  // bwrap binds only what exists; a shared path must be there to be bound (read-only or writable),
  // and the operator's events/ to be hidden.
  private ensureShared(): void {
    mkdirSync(join(this.paths.workspaceDir, OPERATOR_EVENTS_DIR), { recursive: true });
    for (const p of this.shared) {
      const full = join(this.paths.workspaceDir, p);
      // lstat, not exists: a dangling symlink left there is not made into a file wherever it points.
      if (lstatSync(full, { throwIfNoEntry: false })) continue;
      // A name with an extension (MEMORY.md) is a file, anything else a directory.
      if (/\.[a-z0-9]+$/i.test(p)) touch(full);
      else mkdirSync(full, { recursive: true });
    }
  }
}

// Makes a file when missing, never through a symlink (O_NOFOLLOW) and never waiting on a FIFO
// (O_NONBLOCK: no reader gives ENXIO at once). The runner's own files were already made and
// checked beneath the channel's directory (@mom/store ChannelStore.prepareFiles); this is for
// callers that did not.
function touch(file: string): void {
  const { O_WRONLY, O_CREAT, O_APPEND, O_NOFOLLOW, O_NONBLOCK } = constants;
  closeSync(openSync(file, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK, 0o644));
}
