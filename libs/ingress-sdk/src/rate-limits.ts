import { setTimeout as sleep } from "node:timers/promises";

/**
 * Makes `call`, and makes it again after each rate-limit refusal, so no edit or answer is lost to
 * a rate limit; any other failure, and the refusal of the last try, is the caller's, as thrown.
 * For a platform API whose client does not wait on its own (most SDKs do). Written out rather than
 * with a retry library: the wait is often the server's (a 429's Retry-After), and some SDKs throw
 * non-Errors (an HTTP response), which retry libraries turn into errors the SDK's callers would
 * not recognise.
 */
export async function waitOutRateLimits<T>(
  call: () => Promise<T>,
  o: {
    /**
     * How long to wait before try `attempt + 1` after `err`, or undefined when `err` is no rate
     * limit: the server's Retry-After where it gives one, a back-off (`backoffMs`) where not.
     */
    retryAfterMs(err: unknown, attempt: number): number | undefined;
    /** Told of each wait before it starts: log it, count `metrics.platformRateLimits`. */
    limited(waitMs: number, err: unknown): void;
    /** Tries in all (default 8). */
    maxTries?: number;
    /** Waiting stops once this much has been waited in all (default: no bound but maxTries). */
    giveUpAfterMs?: number;
    /** Ends a wait at once: the refusal is thrown (a download given up, a shutdown). */
    signal?: AbortSignal;
  },
): Promise<T> {
  let waited = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const wait = o.retryAfterMs(err, attempt);
      if (wait === undefined || attempt >= (o.maxTries ?? 8) || waited + wait > (o.giveUpAfterMs ?? Infinity) || o.signal?.aborted) throw err;
      o.limited(wait, err);
      waited += wait;
      await sleep(wait, undefined, o.signal && { signal: o.signal }).catch(() => {
        throw err;
      });
    }
  }
}

/** Doubling waits from 0.5 s, at most 30 s: for a rate limit that says nothing of how long. */
export function backoffMs(attempt: number): number {
  return Math.min(30_000, 500 * 2 ** (attempt - 1));
}
