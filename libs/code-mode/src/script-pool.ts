import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

const WORKER = fileURLToPath(new URL("../worker/script-worker.mjs", import.meta.url));

export interface ScriptLimits {
  /** CPU time inside the interpreter; waiting for tools and approvals does not count. */
  cpuMs: number;
  /** QuickJS heap. */
  memoryBytes: number;
  /** Characters of console output kept; the rest is counted. */
  outputChars: number;
}

/** What a script may learn about one callable tool (tools.search / tools.describe). */
export interface CatalogueEntry {
  id: string;
  risk: string;
  description: string;
  declaration: string;
}

export interface ScriptJob {
  code: string;
  /** Ids callable as tools.<id>(input). */
  ids: string[];
  catalogue: CatalogueEntry[];
  limits: ScriptLimits;
}

export type ScriptErrorKind = "syntax" | "runtime" | "cpu" | "memory" | "stopped" | "internal";

export interface ScriptOutcome {
  /** JSON of what the script returned; undefined when it returned nothing (or on error). */
  result?: string;
  error?: { kind: ScriptErrorKind; message: string; line?: number };
  output: string;
  /** Characters of output beyond the cap. */
  dropped: number;
  cpuMs: number;
}

/** The one way out of a script: a tool call, answered with the Result's JSON. */
export type ScriptCallHandler = (toolId: string, inputJson: string) => Promise<string>;

interface PooledWorker {
  worker: Worker;
  ready: Promise<void>;
}

/**
 * Worker threads running scripts in QuickJS. A worker is reused for the next script (a fresh
 * QuickJS runtime each time, so no state crosses scripts) after a clean end; one stopped by
 * `stop`, by its CPU limit or by a crash is ended and replaced. One warm worker is kept ready so
 * a script starts in milliseconds, not the ~100 ms of loading the interpreter.
 */
export class ScriptPool {
  private idle: PooledWorker[] = [];
  private closed = false;

  constructor(private readonly opts: { keepIdle?: number } = {}) {}

  /** Starts a worker ahead of the first script. */
  warm(): void {
    if (!this.closed && this.idle.length === 0) this.idle.push(this.spawn());
  }

  async run(job: ScriptJob, onCall: ScriptCallHandler, signal?: AbortSignal): Promise<ScriptOutcome> {
    if (this.closed) throw new Error("the script pool is closed");
    const pooled = this.idle.pop() ?? this.spawn();
    try {
      await pooled.ready;
    } catch (err) {
      void pooled.worker.terminate();
      return { error: { kind: "internal", message: `the script worker did not start: ${(err as Error).message}` }, output: "", dropped: 0, cpuMs: 0 };
    }
    const { worker } = pooled;
    return new Promise<ScriptOutcome>((resolve) => {
      let settled = false;
      const end = (outcome: ScriptOutcome, reusable: boolean) => {
        if (settled) return;
        settled = true;
        worker.off("message", onMessage).off("error", onError).off("exit", onExit);
        signal?.removeEventListener("abort", onAbort);
        if (reusable && !this.closed && this.idle.length < (this.opts.keepIdle ?? 1)) this.idle.push(pooled);
        else void worker.terminate();
        resolve(outcome);
      };
      const onMessage = (m: { type: string; id?: number; toolId?: string; input?: string; reusable?: boolean } & Partial<ScriptOutcome>) => {
        if (m.type === "call") {
          void onCall(m.toolId!, m.input!)
            .catch((err: unknown) => JSON.stringify({ ok: false, error: (err as Error)?.message ?? String(err) }))
            .then((result) => !settled && worker.postMessage({ type: "answer", id: m.id, result }));
        } else if (m.type === "done") {
          end({ result: m.result, error: m.error, output: m.output ?? "", dropped: m.dropped ?? 0, cpuMs: m.cpuMs ?? 0 }, m.reusable === true);
        }
      };
      const onError = (err: Error) => end({ error: { kind: "internal", message: `the script worker crashed: ${err.message}` }, output: "", dropped: 0, cpuMs: 0 }, false);
      const onExit = (code: number) => end({ error: { kind: "internal", message: `the script worker exited (${code})` }, output: "", dropped: 0, cpuMs: 0 }, false);
      const onAbort = () => end({ error: { kind: "stopped", message: "stopped before it finished" }, output: "", dropped: 0, cpuMs: 0 }, false);
      if (signal?.aborted) return onAbort();
      worker.on("message", onMessage).on("error", onError).on("exit", onExit);
      signal?.addEventListener("abort", onAbort, { once: true });
      worker.postMessage({ type: "run", ...job });
    }).finally(() => this.warm());
  }

  close(): void {
    this.closed = true;
    for (const p of this.idle.splice(0)) void p.worker.terminate();
  }

  private spawn(): PooledWorker {
    // The worker's own JavaScript heap is small; QuickJS's heap is capped per script.
    const worker = new Worker(WORKER, { resourceLimits: { maxOldGenerationSizeMb: 96 }, stdout: true, stderr: true });
    worker.unref();
    const ready = new Promise<void>((resolve, reject) => {
      worker.once("message", () => resolve());
      worker.once("error", reject);
      worker.once("exit", (code) => reject(new Error(`exited (${code})`)));
    });
    ready.catch(() => {});
    return { worker, ready };
  }
}
