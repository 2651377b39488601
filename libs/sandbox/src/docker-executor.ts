import { createHash, randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import type Dockerode from "dockerode";
import { cleanEnv, DEFAULT_EXEC_TIMEOUT_MS, type ExecRequest, type ExecResult, type Executor, type ExecutorOptions } from "./executor.js";
import { inside, type SandboxView } from "./view.js";

const KILL_TIMEOUT_MS = 3000;

/** Container checks under way in this process, by container name. */
const ensuring = new Map<string, Promise<void>>();

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("timed out")), ms);
    p.then((v) => (clearTimeout(t), resolve(v)), (e) => (clearTimeout(t), reject(e)));
  });
}

export interface DockerLimits {
  /** Bytes of memory for the channel's container. */
  memoryBytes?: number;
  /** CPUs (fractions allowed). */
  cpus?: number;
}

export interface DockerOptions extends ExecutorOptions {
  docker: Dockerode;
  /** An image that has bash; it is the system the commands see. */
  image: string;
  workspaceDir: string;
  /** Give the container the host's network (default: none). */
  network: boolean;
  limits: DockerLimits;
  /** Most processes in the container (--pids-limit). */
  maxProcesses: number;
  /**
   * "channel" (default): a container of the channel's own, mounting its view. "workspace": one
   * container for every channel, mounting `sharedView`; each command still starts in (and has
   * HOME at) its channel's directory.
   */
  scope?: "channel" | "workspace";
  /** The workspace container's mounts (scope "workspace"). */
  sharedView?: SandboxView;
}

/** The name of a channel's (or the workspace's) container: stable, so a restarted runner finds it again. */
export function containerName(dir: string, scope: "channel" | "workspace" = "channel"): string {
  return `mom-${scope === "workspace" ? "ws-" : ""}${createHash("sha256").update(dir).digest("hex").slice(0, 16)}`;
}

/**
 * The view as Docker mounts: the image is the system, so only the workspace part is mounted —
 * the workspace read-only, the channels behind an empty tmpfs, this channel and the shared
 * paths writable, the runner's files read-only. The data dir is simply not mounted. Docker
 * mounts parents before children.
 */
export function dockerMounts(view: SandboxView, workspaceDir: string): { binds: string[]; tmpfs: Record<string, string> } {
  const binds: string[] = [];
  const tmpfs: Record<string, string> = { "/tmp": "rw,nosuid,size=256m" };
  for (const m of view.mounts) {
    if (!inside(workspaceDir, m.path)) continue;
    if (m.mode === "hidden") tmpfs[m.path] = "ro,size=1m";
    else binds.push(`${m.path}:${m.path}:${m.mode}`);
  }
  return { binds, tmpfs };
}

/**
 * Commands of one channel run by `exec` in a long-lived container of their own (created on
 * demand from the configured image, started again or recreated when it is stopped or gone):
 * no network unless configured, a read-only root, no capabilities, memory/cpu/pids limits, and
 * the view's mounts. Each command carries a marker variable; a stop kills every process in the
 * container that carries it.
 */
export class DockerExecutor implements Executor {
  readonly kind = "docker" as const;
  readonly view: SandboxView;
  readonly maxOutputBytes: number;
  private readonly name: string;
  /** What the container mounts: the channel's view, or the workspace's shared one. */
  private readonly containerView: SandboxView;

  constructor(private readonly o: DockerOptions) {
    this.view = o.view;
    this.maxOutputBytes = o.maxOutputBytes;
    const shared = o.scope === "workspace";
    if (shared && !o.sharedView) throw new Error('docker scope "workspace" needs the shared view');
    this.containerView = shared ? o.sharedView! : o.view;
    this.name = shared ? containerName(o.workspaceDir, "workspace") : containerName(o.view.channelDir);
  }

  /** The running container, started or created as needed (the health check before every command). */
  async container(): Promise<Dockerode.Container> {
    // Channels sharing a container check it one at a time, so two first commands make one container.
    const previous = ensuring.get(this.name) ?? Promise.resolve();
    const mine = previous.catch(() => {}).then(() => this.ensure());
    const settled = mine.then(
      () => {},
      () => {},
    );
    ensuring.set(this.name, settled);
    void settled.then(() => ensuring.get(this.name) === settled && ensuring.delete(this.name));
    return mine;
  }

  private async ensure(): Promise<Dockerode.Container> {
    const c = this.o.docker.getContainer(this.name);
    const info = await c.inspect().catch((err: { statusCode?: number }) => {
      if (err.statusCode === 404) return undefined;
      throw err;
    });
    if (info?.State.Running) return c;
    if (info) {
      await c.start().catch(async (err: { statusCode?: number }) => {
        // 304: another channel of a shared container (or another runner) started it just now.
        if (err.statusCode === 304) return;
        // Its mounts or image may be gone: start from scratch.
        await c.remove({ force: true });
        await this.create();
      });
      return this.o.docker.getContainer(this.name);
    }
    await this.create();
    return this.o.docker.getContainer(this.name);
  }

  private async create(): Promise<void> {
    const { binds, tmpfs } = dockerMounts(this.containerView, this.o.workspaceDir);
    const env = Object.entries(cleanEnv(this.containerView.channelDir, this.o.env)).map(([k, v]) => `${k}=${v}`);
    const c = await this.o.docker
      .createContainer({
        name: this.name,
        Image: this.o.image,
        Cmd: ["sleep", "2147483647"],
        Env: env,
        WorkingDir: this.containerView.channelDir,
        Labels: { "mom.channel-dir": this.containerView.channelDir, "mom.scope": this.o.scope ?? "channel" },
        HostConfig: {
          Binds: binds,
          Tmpfs: tmpfs,
          NetworkMode: this.o.network ? "host" : "none",
          ReadonlyRootfs: true,
          CapDrop: ["ALL"],
          SecurityOpt: ["no-new-privileges"],
          PidsLimit: this.o.maxProcesses,
          ...(this.o.limits.memoryBytes && { Memory: this.o.limits.memoryBytes }),
          ...(this.o.limits.cpus && { NanoCpus: Math.round(this.o.limits.cpus * 1e9) }),
        },
      })
      .catch(async (err: { statusCode?: number }) => {
        // Another runner made it first.
        if (err.statusCode === 409) return this.o.docker.getContainer(this.name);
        throw err;
      });
    await c.start().catch((err: { statusCode?: number }) => {
      if (err.statusCode !== 304) throw err; // 304: already running
    });
  }

  async exec(req: ExecRequest): Promise<ExecResult> {
    if (req.signal?.aborted) return { exitCode: null, stopped: "aborted", outputBytes: 0 };
    const container = await this.container();
    const marker = `MOM_EXEC_ID=${req.execId ?? randomUUID()}`;
    const env = Object.entries(cleanEnv(this.view.channelDir, this.o.env)).map(([k, v]) => `${k}=${v}`);
    const exec = await container.exec({
      Cmd: ["bash", "-c", req.command],
      Env: [...env, marker],
      WorkingDir: req.cwd ?? this.view.channelDir,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    });
    if (req.signal?.aborted) return { exitCode: null, stopped: "aborted", outputBytes: 0 };
    const stream = await exec.start({ hijack: true, stdin: false });
    const timeoutMs = req.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;

    let outputBytes = 0;
    let stopped: ExecResult["stopped"];
    let killing: Promise<void> | undefined;
    // Every process of this command, found by its marker inside the container, setsid or not.
    // When that cannot run (the container is at its pids limit: a fork bomb), the container
    // itself is killed; the next command starts it again.
    const kill = () =>
      (killing ??= withTimeout(this.killMarked(container, marker), KILL_TIMEOUT_MS).catch(() => container.kill().catch(() => {})));
    const stop = (why: NonNullable<ExecResult["stopped"]>) => {
      stopped ??= why;
      void kill();
    };
    const sink = new Writable({
      write: (chunk: Buffer, _enc, done) => {
        if (stopped === "output") return done();
        const room = this.o.maxOutputBytes - outputBytes;
        if (chunk.length > room) {
          if (room > 0) req.onData?.(chunk.subarray(0, room));
          outputBytes += Math.max(room, 0);
          stop("output");
          stream.destroy();
          return done();
        }
        outputBytes += chunk.length;
        req.onData?.(chunk);
        done();
      },
    });
    this.o.docker.modem.demuxStream(stream, sink, sink);
    const timer = setTimeout(() => stop("timeout"), timeoutMs);
    const onAbort = () => stop("aborted");
    req.signal?.addEventListener("abort", onAbort, { once: true });
    // An abort while the exec was being made fired before anyone listened.
    if (req.signal?.aborted) onAbort();
    try {
      await new Promise<void>((resolve) => {
        stream.on("end", resolve);
        stream.on("close", resolve);
        stream.on("error", () => resolve());
      });
      // The main process ended: what it left running in the background goes too.
      await kill();
      if (stopped) return { exitCode: null, stopped, outputBytes };
      const { ExitCode } = await exec.inspect();
      return { exitCode: ExitCode ?? null, outputBytes };
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** The channel's container keeps what a dead runner's `docker exec` started: killed by its marker. */
  async killLeftovers(execId: string): Promise<void> {
    const c = this.o.docker.getContainer(this.name);
    const info = await c.inspect().catch(() => undefined);
    if (info?.State.Running) await withTimeout(this.killMarked(c, `MOM_EXEC_ID=${execId}`), KILL_TIMEOUT_MS);
  }

  private async killMarked(container: Dockerode.Container, marker: string): Promise<void> {
    const k = await container.exec({
      Cmd: ["sh", "-c", `for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null | grep -qx '${marker}' && kill -9 \${p#/proc/} 2>/dev/null; done; true`],
      AttachStdout: true,
      AttachStderr: true,
    });
    const s = await k.start({ hijack: true, stdin: false });
    s.resume();
    await new Promise<void>((r) => (s.on("end", r), s.on("close", r), s.on("error", () => r())));
    const { ExitCode } = await k.inspect();
    if (ExitCode !== 0) throw new Error(`the kill inside the container failed (${ExitCode})`);
  }

  /** Removes the container (on shutdown it may just stay; it is found again). A shared one goes for every channel. */
  async remove(): Promise<void> {
    await this.o.docker
      .getContainer(this.name)
      .remove({ force: true })
      .catch(() => {});
  }
}
