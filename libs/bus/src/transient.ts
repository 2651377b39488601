import pRetry from "p-retry";
import type { Logger } from "pino";

/**
 * Failures a JetStream cluster gives while it elects a leader, or while a server is away or
 * starting: the same call works a few seconds later. (A new R3 stream or bucket on a cluster just
 * formed, created by three services at once on a busy machine, timed out; the runner exited.)
 */
export function isTransient(err: unknown): boolean {
  const e = err as { code?: number | string; message?: string } | undefined;
  if (e?.code === 10008 || e?.code === 503 || e?.code === "TIMEOUT") return true; // temporarily unavailable; no responders
  return /timeout|timed out|no responders|temporarily unavailable|leadership change|not current|no suitable peers/i.test(e?.message ?? "");
}

/**
 * Runs `fn` again while it fails transiently, for up to `forMs` (backoff 250 ms → 2 s), saying so;
 * any other failure, or the last one, is thrown as it is.
 */
export function retryTransient<T>(what: string, fn: () => Promise<T>, logger: Logger, forMs = 30_000): Promise<T> {
  return pRetry(fn, {
    retries: Number.POSITIVE_INFINITY,
    maxRetryTime: forMs,
    minTimeout: 250,
    maxTimeout: 2000,
    shouldRetry: ({ error }) => isTransient(error),
    onFailedAttempt: ({ error, attemptNumber }) => {
      if (isTransient(error) && (attemptNumber === 1 || attemptNumber % 5 === 0)) logger.warn({ err: error, attempt: attemptNumber }, `${what} failed; retrying (NATS busy or electing a leader?)`);
    },
  });
}
