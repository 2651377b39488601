import { closeSync, constants, lchownSync, lstatSync, mkdirSync, openSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { lchown, lstat } from "node:fs/promises";
import { dirname, join } from "node:path";
import type Dockerode from "dockerode";
import { BwrapExecutor, bwrapAvailable, DEFAULT_TMP_BYTES } from "./bwrap-executor.js";
import { someEntries, someEntriesSync } from "./dir-entries.js";
import { DockerExecutor } from "./docker-executor.js";
import { ConfinedFiles } from "./confined-files.js";
import { type CommandLimits, DEFAULT_MAX_OUTPUT_BYTES, type Executor, type ExecutorKind } from "./executor.js";
import type { SandboxIdentity } from "./file-rights.js";
import { HostExecutor } from "./host-executor.js";
import { type CgroupBase, controllerCgroupBase } from "./pids-cgroup.js";
import { noFallocateFilter } from "./seccomp.js";
import { hasTool } from "./tools-on-path.js";
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
  /** bwrap: the uid and gid commands run as when the runner is root. Default DEFAULT_SANDBOX_UID. */
  uid?: number;
  gid?: number;
  /** bwrap/host: the size of a command's private /tmp, in MiB. Default 256. */
  tmpMb?: number;
  /** bwrap/host: the largest file a command may write, in MiB. Default 1024. */
  maxFileMb?: number;
  /** bwrap/host: the most a channel's directory may hold, in MiB. Default 2048. */
  diskMb?: number;
}

export const DEFAULT_MAX_PROCESSES = 512;
/** The uid and gid a root runner's commands run as: no login user has it on a usual host. */
export const DEFAULT_SANDBOX_UID = 10001;
export const DEFAULT_MEMORY_MB = 1024;
export const DEFAULT_TMP_MB = DEFAULT_TMP_BYTES / 1024 / 1024;
export const DEFAULT_MAX_FILE_MB = 1024;
export const DEFAULT_DISK_MB = 2048;

/** One line per limit, for the start-up log and `mom doctor`: which are in force here and how. */
export interface LimitReport {
  name: "user" | "processes" | "memory" | "tmp" | "file size" | "disk";
  on: boolean;
  detail: string;
}

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
  readonly cgroupBase: string | undefined;
  private readonly pidsBase: CgroupBase | undefined;
  private readonly memoryBase: CgroupBase | undefined;
  /** Who bash and the file tools are (bwrap: an unprivileged uid; host: the runner); undefined for docker. */
  readonly identity: SandboxIdentity | undefined;
  /** Set when the runner is root: commands switch to identity's uid and gid. */
  private readonly switchUser: { uid: number; gid: number } | undefined;

  constructor(
    private readonly settings: SandboxSettings,
    private readonly paths: { dataDir: string; workspaceDir: string },
    hasBwrap: (user?: { uid: number; gid: number }) => boolean = bwrapAvailable,
  ) {
    this.pidsBase = controllerCgroupBase("pids");
    this.memoryBase = controllerCgroupBase("memory");
    this.cgroupBase = this.pidsBase?.dir;
    const root = process.getuid?.() === 0;
    const sandboxUser = root ? { uid: settings.uid ?? DEFAULT_SANDBOX_UID, gid: settings.gid ?? settings.uid ?? DEFAULT_SANDBOX_UID } : undefined;
    if (settings.type === "auto") {
      const ok = hasBwrap(sandboxUser);
      this.kind = ok ? "bwrap" : "host";
      this.reason = ok ? "auto: bubblewrap works here" : "auto: bubblewrap is not installed or cannot create namespaces here, so commands would run on the host";
    } else {
      // Refusing to start beats failing every command later with bwrap's own error.
      if (settings.type === "docker" && !settings.image) throw new Error('sandbox.type "docker" needs sandbox.image');
      if (settings.type === "bwrap" && !hasBwrap(sandboxUser)) {
        throw new Error(
          `sandbox.type is "bwrap" but bubblewrap is not installed or cannot create namespaces here${sandboxUser ? ` and start a command as uid ${sandboxUser.uid} (the runner is root; its commands run as sandbox.uid through setpriv)` : ""}: install it (apt-get install -y bubblewrap), allow user namespaces, or use "auto"`,
        );
      }
      this.kind = settings.type;
      this.reason = `configured: sandbox.type ${settings.type}`;
    }
    if (this.kind === "bwrap" && sandboxUser) {
      if (!hasTool("setpriv")) throw new Error("the runner is root and its commands must run as sandbox.uid, which needs setpriv (util-linux) on PATH");
      this.switchUser = sandboxUser;
      this.identity = { ...sandboxUser, groups: [] };
    } else if (this.kind !== "docker") {
      this.identity = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0, groups: process.getgroups?.() ?? [] };
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
    if (this.switchUser) {
      // The channel's directory and the shared paths it may write belong to the commands' uid (a
      // data dir made by a root runner before is handed over once); the runner's own files stay
      // the runner's.
      const keep = new Set(runnerFiles);
      adopt(channelDir, this.switchUser, keep);
      for (const m of view.mounts) if (m.mode === "rw" && m.path !== channelDir) adopt(m.path, this.switchUser, keep);
    }
    // Directories the runner makes in the channel's directory later (attachments/, scratch/ after
    // an `rm -rf`) are handed over before each command and each file-tool write: only direct
    // entries, each with lchown, which changes that entry and never follows a link (safe while a
    // command of the channel runs).
    const user = this.switchUser;
    const keep = new Set(runnerFiles);
    const prepare = user ? () => adoptEntries(channelDir, user, keep) : undefined;
    const o = {
      view,
      env: this.settings.env ?? {},
      maxOutputBytes: this.settings.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      ...(prepare && { prepare }),
      ...(this.kind !== "docker" && { limits: this.commandLimits(channelDir, runnerFiles) }),
      ...(this.kind === "bwrap" && this.switchUser && { user: this.switchUser }),
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
    return { executor, files: new ConfinedFiles(view, o.maxOutputBytes, this.identity, prepare), description: this.describe(sharedWritable), sharedWritable };
  }

  /** Each command's limits on this host (bwrap, host): cgroups where they can be made, rlimits, the disk check. */
  private commandLimits(channelDir: string, runnerFiles: string[]): CommandLimits {
    const memoryBytes = (this.settings.memoryMb ?? DEFAULT_MEMORY_MB) * 1024 * 1024;
    return {
      cgroups: {
        ...(this.pidsBase && { pids: { base: this.pidsBase, maxProcesses: this.settings.maxProcesses ?? DEFAULT_MAX_PROCESSES } }),
        ...(this.memoryBase && { memory: { base: this.memoryBase, maxBytes: memoryBytes } }),
      },
      memoryBytes,
      ...(!this.memoryBase && { dataBytes: memoryBytes }),
      fileBytes: (this.settings.maxFileMb ?? DEFAULT_MAX_FILE_MB) * 1024 * 1024,
      tmpBytes: (this.settings.tmpMb ?? DEFAULT_TMP_MB) * 1024 * 1024,
      disk: { dir: channelDir, maxBytes: (this.settings.diskMb ?? DEFAULT_DISK_MB) * 1024 * 1024, exclude: runnerFiles },
    };
  }

  /** Which limits hold for each command here, and by what mechanism (start-up log, `mom doctor`). */
  limitsReport(): LimitReport[] {
    if (this.kind === "docker") {
      return [
        { name: "processes", on: true, detail: `the container's pids limit (${this.settings.maxProcesses ?? DEFAULT_MAX_PROCESSES})` },
        { name: "memory", on: this.settings.memoryMb !== undefined, detail: this.settings.memoryMb ? `${this.settings.memoryMb} MiB per container` : "none (set sandbox.memoryMb)" },
      ];
    }
    const s = this.settings;
    const prlimit = hasTool("prlimit");
    const seccomp = this.kind === "bwrap" && noFallocateFilter() !== undefined;
    return [
      this.switchUser
        ? { name: "user", on: true, detail: `commands and file tools run as uid ${this.switchUser.uid}, gid ${this.switchUser.gid} (the runner is root; sandbox.uid)` }
        : { name: "user", on: this.identity?.uid !== 0, detail: `commands and file tools run as the runner's uid ${this.identity?.uid}${this.identity?.uid === 0 ? " (root!)" : ""}` },
      this.pidsBase
        ? { name: "processes", on: true, detail: `${s.maxProcesses ?? DEFAULT_MAX_PROCESSES} per command (cgroup v${this.pidsBase.version} pids)` }
        : { name: "processes", on: false, detail: "no process limit (no pids cgroup may be created here)" },
      this.memoryBase
        ? { name: "memory", on: true, detail: `${s.memoryMb ?? DEFAULT_MEMORY_MB} MiB per command (cgroup v${this.memoryBase.version} memory)` }
        : prlimit
          ? { name: "memory", on: true, detail: `${s.memoryMb ?? DEFAULT_MEMORY_MB} MiB per process, not per command (RLIMIT_DATA: no memory cgroup may be created here)` }
          : { name: "memory", on: false, detail: "no memory limit (no memory cgroup may be created here and prlimit is missing)" },
      this.kind === "bwrap"
        ? { name: "tmp", on: true, detail: `/tmp is a ${s.tmpMb ?? DEFAULT_TMP_MB} MiB tmpfs per command` }
        : { name: "tmp", on: false, detail: "/tmp is the host's (host sandbox)" },
      prlimit
        ? { name: "file size", on: true, detail: `${s.maxFileMb ?? DEFAULT_MAX_FILE_MB} MiB per file (RLIMIT_FSIZE)` }
        : { name: "file size", on: false, detail: "no per-file limit (prlimit is missing)" },
      {
        name: "disk",
        on: true,
        detail: `${s.diskMb ?? DEFAULT_DISK_MB} MiB per channel directory, checked every 250 ms while a command runs${seccomp ? "; fallocate refused (seccomp)" : ""}`,
      },
    ];
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
    const l = this.settings;
    return (
      `bubblewrap — each command runs in a fresh sandbox: this channel's directory writable, ${shared}, the rest of the workspace and the system read-only, other channels hidden, a private /tmp emptied after every command, ${net}. Background processes end with the command. ` +
      `Commands and file tools run as an unprivileged user (uid ${this.identity?.uid}): files only root may read stay unreadable. Limits per command: ${l.memoryMb ?? DEFAULT_MEMORY_MB} MB of memory, ${l.tmpMb ?? DEFAULT_TMP_MB} MB in /tmp, files up to ${l.maxFileMb ?? DEFAULT_MAX_FILE_MB} MB; this channel's directory may hold ${l.diskMb ?? DEFAULT_DISK_MB} MB.`
    );
  }

  // bwrap binds only what exists; a shared path must be there to be bound (read-only or writable),
  // and the operator's events/ to be hidden. (With a root runner, forChannel hands what a channel
  // may write to the commands' uid.)
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

/** Most entries one hand-over walks; a bigger tree is handed over in parts, one per channel start. */
const ADOPT_MAX_ENTRIES = 100_000;

/**
 * Hands `path` and what root owns beneath it to `user`, except `keep`; entries of other users are
 * left alone. The whole tree is walked only while `path` itself is still root's (a data dir from
 * before, handed over once); after that only its direct entries (directories the runner made as
 * root since, like attachments/). Never through a symlink: lchown changes a link itself, a link is
 * never descended, and an entry whose directory no longer resolves to itself (swapped for a link
 * since it was listed) is skipped. It runs when the channel's agent is created, when no command
 * of the channel is alive to swap anything.
 */
function adopt(path: string, user: { uid: number; gid: number }, keep: ReadonlySet<string>): void {
  let top;
  try {
    top = lstatSync(path);
  } catch {
    return;
  }
  const deep = top.uid === 0;
  const stack: Array<[string, number]> = [[path, 0]];
  let listed = 1;
  while (stack.length > 0) {
    const [p, depth] = stack.pop()!;
    let st;
    try {
      st = lstatSync(p);
      if (p !== path && realpathSync(dirname(p)) !== dirname(p)) continue;
    } catch {
      continue;
    }
    if (!keep.has(p) && st.uid === 0) {
      try {
        lchownSync(p, user.uid, user.gid);
      } catch {
        // read-only file system, or gone: the command will say what it cannot write
      }
    }
    if (st.isDirectory() && (deep || depth === 0)) {
      const names = someEntriesSync(p, ADOPT_MAX_ENTRIES - listed); // none when unreadable: left as it is
      listed += names.length;
      for (const name of names) stack.push([join(p, name), depth + 1]);
    }
  }
}

/** The direct entries of `dir` that root owns (at most ADOPT_MAX_ENTRIES), handed to `user` (except `keep`); never follows a link. */
async function adoptEntries(dir: string, user: { uid: number; gid: number }, keep: ReadonlySet<string>): Promise<void> {
  const paths = (await someEntries(dir, ADOPT_MAX_ENTRIES)).map((name) => join(dir, name)).filter((p) => !keep.has(p));
  for (let at = 0; at < paths.length; at += 1000) {
    await Promise.all(
      paths.slice(at, at + 1000).map(async (p) => {
        const st = await lstat(p).catch(() => undefined);
        if (st?.uid === 0) await lchown(p, user.uid, user.gid).catch(() => {});
      }),
    );
  }
}
