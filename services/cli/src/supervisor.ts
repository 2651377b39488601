import { type ChildProcess, spawn } from "node:child_process";
import pRetry from "p-retry";

/** One service that `mom up` runs as a process of its own (an adapter's ingress). */
export interface ChildService {
  /** What the terminal and the log call it, e.g. "ingress slack". */
  name: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Where its stdout and stderr go (the log file). */
  outputFd: number;
}

export interface SupervisorOptions {
  /** A line for the operator (the terminal, and the log). */
  say: (line: string, fields: Record<string, unknown>) => void;
  /** Backoff between restarts: 1 s, 2 s, 4 s … up to maxDelayMs. */
  minDelayMs?: number;
  maxDelayMs?: number;
  /** A process that ran this long before it ended starts the backoff over. */
  stableMs?: number;
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/**
 * Keeps child processes running: each in its own process group (a Ctrl-C in the terminal reaches
 * `mom up` only, which stops them in order) with an IPC channel (if `mom up` dies, even by kill -9,
 * they see it go and stop). One that exits is started again with exponential backoff (p-retry),
 * said each time; one crashing never touches the others.
 */
export class Supervisor {
  private readonly running = new Map<string, ChildProcess>();
  private readonly abort = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private readonly minDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly stableMs: number;

  constructor(private readonly opts: SupervisorOptions) {
    this.minDelayMs = opts.minDelayMs ?? 1000;
    this.maxDelayMs = opts.maxDelayMs ?? 60_000;
    this.stableMs = opts.stableMs ?? 60_000;
  }

  /** Pids of the processes running now, by name. */
  pids(): Record<string, number> {
    return Object.fromEntries([...this.running].flatMap(([name, c]) => (c.pid ? [[name, c.pid]] : [])));
  }

  start(service: ChildService): void {
    this.loops.push(this.keep(service));
  }

  private get stopping(): boolean {
    return this.abort.signal.aborted;
  }

  private async keep(service: ChildService): Promise<void> {
    let restarts = 0;
    while (!this.stopping) {
      try {
        await pRetry(
          async () => {
            const startedAt = Date.now();
            const ended = await this.runOnce(service, restarts > 0);
            if (this.stopping) return;
            const ranMs = Date.now() - startedAt;
            restarts++;
            const error = new Error(`${service.name} exited (${ended.how}) after ${seconds(ranMs)}${ended.reason ? `: ${ended.reason}` : ""}`);
            // It ran well for a while: start over from the shortest delay (this pRetry ends, the loop starts a new one).
            if (ranMs >= this.stableMs) {
              this.opts.say(`mom: ${error.message}; restarting it`, { service: service.name, ended: ended.how, reason: ended.reason, ranMs, restarts });
              return;
            }
            throw error;
          },
          {
            retries: Number.POSITIVE_INFINITY,
            factor: 2,
            minTimeout: this.minDelayMs,
            maxTimeout: this.maxDelayMs,
            randomize: false,
            signal: this.abort.signal,
            onFailedAttempt: ({ error, retriesConsumed }) => {
              if (this.stopping) return;
              const delay = Math.min(this.maxDelayMs, this.minDelayMs * 2 ** retriesConsumed);
              this.opts.say(`mom: ${error.message}; restarting it in ${seconds(delay)} (restart ${restarts})`, { service: service.name, delayMs: delay, restarts });
            },
          },
        );
      } catch (err) {
        if (this.stopping) return;
        this.opts.say(`mom: ${service.name} cannot be restarted: ${(err as Error).message}`, { service: service.name });
        return;
      }
    }
  }

  /**
   * Runs the service until its process ends; resolves how it ended, with the one-line reason the
   * process gave for it (its `mom: …` error, sent over the IPC channel before it exits) when it
   * gave one: the terminal says why an ingress stopped, not only its exit code.
   */
  private runOnce(service: ChildService, again: boolean): Promise<{ how: string; reason?: string }> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, service.args, {
        env: service.env,
        stdio: ["ignore", service.outputFd, service.outputFd, "ipc"],
        detached: true,
      });
      this.running.set(service.name, child);
      // The channel tells the child when `mom up` is gone, and brings back the reason it failed.
      child.channel?.unref();
      let reason: string | undefined;
      child.on("message", (m: unknown) => {
        if (m && typeof m === "object" && typeof (m as { fatal?: unknown }).fatal === "string") reason = (m as { fatal: string }).fatal;
      });
      if (again) this.opts.say(`mom: ${service.name} started again (pid ${child.pid})`, { service: service.name, pid: child.pid });
      let ended: string | undefined;
      const done = () => {
        if (ended === undefined) return;
        this.running.delete(service.name);
        resolve({ how: ended, ...(reason && { reason }) });
        ended = undefined;
      };
      child.once("error", (err) => {
        ended = `could not start: ${err.message}`;
        done();
      });
      child.once("exit", (code, signal) => {
        ended = signal ? `signal ${signal}` : `code ${code}`;
        // A message sent just before the exit may still be in the channel: "close" comes after it.
        setTimeout(done, 500).unref();
      });
      child.once("close", () => done());
    });
  }

  /** Stops every process (SIGTERM, then SIGKILL after `graceMs`) and restarts none. */
  async stop(graceMs = 3000): Promise<void> {
    this.abort.abort();
    const children = [...this.running.values()];
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        const timer = setTimeout(() => this.killGroup(child), graceMs);
        await exited;
        clearTimeout(timer);
      }),
    );
    await Promise.all(this.loops);
  }

  /** SIGKILL, at once, to every process and whatever it started. */
  kill(): void {
    this.abort.abort();
    for (const child of this.running.values()) this.killGroup(child);
  }

  private killGroup(child: ChildProcess): void {
    if (!child.pid) return;
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  }
}
