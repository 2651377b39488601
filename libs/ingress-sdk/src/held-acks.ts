// A platform that pushes or hands out messages learns from its acknowledgement (a webhook's 200, a
// getUpdates offset) that it may forget them. Given before mom has stored a message on the bus — a
// NATS outage makes `inbound.receive` retry its publish for up to a minute — a crash or a publish
// that gives up meanwhile loses it for good, while the platform would have delivered it again.
import type { Logger } from "pino";

/**
 * How long a webhook's answer waits for its messages to be stored. Neither platform publishes how
 * long it waits: Meta asks for answers in well under a second and re-sends a post that failed or
 * timed out, with backoff, for days; Telegram re-sends on a timeout of its own (grammY ends its
 * requests at 10 s to stay below it) and holds the chat's later updates until the failed one is
 * taken. Holding past the platform's patience gains nothing — it re-sends anyway — and holding
 * until NATS is back would pile up its requests through a long outage. A store takes milliseconds;
 * through a leader election (4–9 s) or a longer outage the answer is a 5xx after 5 s while the
 * handling goes on, and the platform's re-send finds the message stored (answered at once) or waits
 * for the handling still in flight (the intake joins it): nothing is lost, nothing stored twice.
 */
export const WEBHOOK_ACK_WITHIN_MS = 5000;

/** Holding longer than this is said in the log (when the holder has a line for it). */
const LOUD_AFTER_MS = 2000;

/** An abort signal as fetch, AbortController and grammY's transformers give it. */
export interface AbortSignalLike {
  readonly aborted: boolean;
  addEventListener(type: "abort", listener: () => void, o?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/** When `unstored` stops waiting before everything it waits for has settled. */
export interface HoldOptions {
  /** After this long (the platform's patience). */
  withinMs?: number;
  /** When this aborts (the platform call that waits was cancelled). */
  signal?: AbortSignalLike;
}

/**
 * A platform's acknowledgement held until what it delivered is stored: `track` each delivery with
 * the promise `inbound.receive` (or `receiveInTurn`) gave for it, and acknowledge only what
 * `unstored` leaves out. A handling that resolved is stored, refused by the DM policy, known
 * already, or no message at all; one that rejected could not be stored, and the platform must
 * deliver it again. Keys are the platform's own (Telegram's update ids).
 */
export class HeldAcknowledgements<K> {
  private readonly pending = new Map<K, Promise<void>>();
  private readonly failed = new Set<K>();
  private readonly waiting = new Set<() => void>();
  private stopped = false;

  /** `holding`: the warning logged while a wait lasts over 2 s (none without it). */
  constructor(private readonly o: { log?: Logger; holding?: string } = {}) {}

  /** `handled` settles once the delivery's message is stored (or refused, or known already); a rejection means it must come again. */
  track(key: K, handled: Promise<unknown>): void {
    this.failed.delete(key);
    const settled: Promise<void> = handled.then(
      () => this.settle(key, settled, false),
      () => this.settle(key, settled, true),
    );
    this.pending.set(key, settled);
  }

  private settle(key: K, settled: Promise<void>, failed: boolean): void {
    if (this.pending.get(key) !== settled) return; // tracked anew since
    this.pending.delete(key);
    if (failed) this.failed.add(key);
  }

  /** No more waiting (shutdown): `unstored` answers at once with what is not stored, which stays with the platform for the next process. */
  stop(): void {
    this.stopped = true;
    for (const wake of this.waiting) wake();
  }

  /**
   * Waits until every tracked delivery `which` selects has settled — no longer than `withinMs`,
   * an abort of `signal` or `stop()` — and resolves with those not stored: the ones that failed
   * (forgotten now: the platform delivers them again and they are tracked anew) and the ones still
   * unsettled. Empty: acknowledge them all.
   */
  async unstored(which: (key: K) => boolean = () => true, o: HoldOptions = {}): Promise<K[]> {
    const unsettled = () => [...this.pending].filter(([key]) => which(key));
    if (!this.stopped && !o.signal?.aborted && unsettled().length > 0) await this.wait(unsettled, o);
    const left = [...unsettled().map(([key]) => key), ...[...this.failed].filter(which)];
    for (const key of left) this.failed.delete(key);
    return left;
  }

  private async wait(unsettled: () => Array<[K, Promise<void>]>, o: HoldOptions): Promise<void> {
    const { log, holding } = this.o;
    const started = Date.now();
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    this.waiting.add(wake);
    o.signal?.addEventListener("abort", wake, { once: true });
    const deadline = o.withinMs === undefined ? undefined : setTimeout(wake, o.withinMs);
    const loud = holding && log ? setTimeout(() => log.warn({ held: unsettled().map(([key]) => key) }, holding), LOUD_AFTER_MS) : undefined;
    try {
      await Promise.race([Promise.all(unsettled().map(([, p]) => p)), woken]);
    } finally {
      this.waiting.delete(wake);
      o.signal?.removeEventListener("abort", wake);
      clearTimeout(deadline);
      clearTimeout(loud);
    }
    const heldMs = Date.now() - started;
    if (loud && heldMs > LOUD_AFTER_MS) log!.info({ heldMs, unsettled: unsettled().length }, "held deliveries settled or given up: acknowledging what is stored");
  }
}

/** What `whenStored` rejects with: a webhook answers it 503, so the platform sends the post again. */
class NotStored extends Error {
  readonly status = 503;
}

/**
 * A webhook's answer held until every message of the post is stored (or refused, known already,
 * or no message): resolves then, so the route answers 200. Rejects with a 503 error (`status`,
 * which `serveWebhook` answers with) when one could not be stored, or when `withinMs` passed
 * first (`WEBHOOK_ACK_WITHIN_MS` says why 5 s): the platform re-sends the post, and the messages'
 * msg-ids make that harmless.
 */
export async function whenStored(handlings: Iterable<Promise<unknown>>, withinMs = WEBHOOK_ACK_WITHIN_MS): Promise<void> {
  const held = new HeldAcknowledgements<number>();
  let n = 0;
  for (const handling of handlings) held.track(n++, handling);
  const left = await held.unstored(undefined, { withinMs });
  if (left.length > 0) throw new NotStored(`${left.length} of the ${n} messages of this delivery not stored within ${withinMs} ms: asking the platform to send it again`);
}
