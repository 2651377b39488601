/**
 * The scheduler's notion of wall time: when events are due, how late they are, the per-minute
 * budget. (Watching the directory — polling, waiting for a write to settle — paces I/O and uses
 * real timers whatever the clock.)
 */
export interface Clock {
  now(): number;
  /** Calls `fn` once at (or soon after) the time `atMs`; returns a cancel function. */
  at(atMs: number, fn: () => void): () => void;
}

// setTimeout takes at most 2^31-1 ms (~24.8 days); a one-shot months away is re-armed on the way.
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  at(atMs, fn) {
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      const wait = atMs - Date.now();
      if (wait <= 0) return void (timer = undefined, fn());
      timer = setTimeout(arm, Math.min(wait, MAX_TIMEOUT_MS));
      timer.unref();
    };
    // Never call back synchronously: callers arm timers while they hold their own state.
    timer = setTimeout(arm, 0);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/** A clock tests move by hand: `advance(ms)` / `set(ms)` run the callbacks that became due. */
export class FakeClock implements Clock {
  private timers: Array<{ atMs: number; fn: () => void; id: number }> = [];
  private nextId = 1;

  constructor(private t: number = Date.parse("2026-01-05T08:00:00Z")) {}

  now(): number {
    return this.t;
  }

  at(atMs: number, fn: () => void): () => void {
    const id = this.nextId++;
    this.timers.push({ atMs, fn, id });
    if (atMs <= this.t) queueMicrotask(() => this.fire());
    return () => void (this.timers = this.timers.filter((x) => x.id !== id));
  }

  set(ms: number): void {
    this.t = ms;
    this.fire();
  }

  advance(ms: number): void {
    this.set(this.t + ms);
  }

  private fire(): void {
    const due = this.timers.filter((x) => x.atMs <= this.t).sort((a, b) => a.atMs - b.atMs);
    this.timers = this.timers.filter((x) => x.atMs > this.t);
    for (const x of due) x.fn();
  }
}
