import { DEFAULT_TOOL_TIMEOUT_MS } from "./tool-contract.js";

/** What runWithTimeout rejects with when the time is up. */
export class ToolTimeoutError extends Error {
  constructor(
    readonly toolId: string,
    readonly timeoutMs: number,
  ) {
    super(`${toolId} timed out after ${timeoutMs} ms`);
    this.name = "ToolTimeoutError";
  }
}

/**
 * Runs `fn` with a signal that aborts when `signal` (the run's) aborts or `timeoutMs` passes, and
 * settles as soon as either happens even if `fn` ignores its signal — for a ToolGate's `fn` call.
 */
export async function runWithTimeout<T>(
  fn: (signal: AbortSignal) => Promise<T>,
  opts: { toolId: string; timeoutMs?: number; signal?: AbortSignal },
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    const abort = (reason: unknown) => {
      // Settle first, so the caller sees this reason rather than whatever the tool throws on abort.
      reject(reason);
      controller.abort(reason);
    };
    onAbort = () => abort(opts.signal?.reason ?? new Error(`${opts.toolId} was aborted`));
    if (opts.signal?.aborted) onAbort();
    else opts.signal?.addEventListener("abort", onAbort, { once: true });
    timer = setTimeout(() => abort(new ToolTimeoutError(opts.toolId, timeoutMs)), timeoutMs);
  });
  try {
    if (controller.signal.aborted) return await stopped;
    return await Promise.race([fn(controller.signal), stopped]);
  } finally {
    clearTimeout(timer);
    if (onAbort) opts.signal?.removeEventListener("abort", onAbort);
  }
}
