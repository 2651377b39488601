import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

const WORKER = fileURLToPath(new URL("../probe/probe-worker.mjs", import.meta.url));
/** Bound on starting the worker itself (loading jiti); not counted against a tool's load time. */
const START_TIMEOUT_MS = 60_000;

/**
 * Loads each custom tool file once in a worker thread before the runner loads it, so a tool
 * that loops while loading (at import or in its factory) or calls `process.exit` costs a worker,
 * never the runner. One worker serves file after file and is replaced after a bad one. A tool
 * that passes is then loaded in the runner itself: its import runs twice.
 */
export class ToolProbe {
  private worker?: { w: Worker; ready: Promise<void> };
  private seq = 0;

  constructor(private readonly o: { dataDir: string; workspaceDir: string }) {}

  /** undefined when loading finished within `timeoutMs`; else the problem, for the problems list. */
  async check(path: string, timeoutMs: number): Promise<string | undefined> {
    let current;
    try {
      current = this.start();
      await current.ready;
    } catch (err) {
      this.stop();
      return `could not check the tool: ${(err as Error).message}`;
    }
    const { w } = current;
    const id = ++this.seq;
    return new Promise((resolve) => {
      const finish = (problem: string | undefined, replace: boolean) => {
        clearTimeout(timer);
        w.off("message", onMessage).off("exit", onExit).off("error", onError);
        if (replace) this.stop();
        resolve(problem);
      };
      const onMessage = (m: { id?: number }) => m.id === id && finish(undefined, false);
      const onExit = (code: number) => finish(`loading ended the process (exit code ${code}, e.g. process.exit at import); not loaded`, true);
      const onError = (err: Error) => finish(`loading crashed: ${err.message}`, true);
      const timer = setTimeout(() => finish(`loading did not finish within ${timeoutMs} ms (a loop at import or in the factory?); not loaded`, true), timeoutMs);
      w.on("message", onMessage).on("exit", onExit).on("error", onError);
      w.postMessage({ id, path });
    });
  }

  stop(): void {
    const current = this.worker;
    this.worker = undefined;
    void current?.w.terminate();
  }

  private start(): { w: Worker; ready: Promise<void> } {
    if (this.worker) return this.worker;
    const w = new Worker(WORKER, { workerData: this.o, stdout: true, stderr: true });
    w.unref();
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the checking worker did not start")), START_TIMEOUT_MS);
      w.once("message", () => (clearTimeout(timer), resolve()));
      w.once("error", (err) => (clearTimeout(timer), reject(err)));
      w.once("exit", (code) => (clearTimeout(timer), reject(new Error(`the checking worker exited (${code})`))));
    });
    this.worker = { w, ready };
    return this.worker;
  }
}
