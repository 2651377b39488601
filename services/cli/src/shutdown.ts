export type Closer = () => Promise<void>;

/** What ends a service process: a signal, its input (Ctrl-D), or the `mom up` that started it going away. */
export type StopReason = "SIGINT" | "SIGTERM" | "SIGHUP" | "done" | "parent gone";

export interface ShutdownOptions {
  /** Closed in reverse order, each awaited. */
  closers: Closer[];
  /** Resolves when the service ended by itself (the terminal chat's Ctrl-D). */
  done?: Promise<void>;
  /** Runs first, at the first stop: e.g. a Ctrl-C cuts a run short instead of letting it finish. */
  onStop?: (reason: StopReason) => void;
  /** How long the orderly shutdown may take; then `force` runs and the process exits anyway. */
  deadlineMs?: (reason: StopReason) => number | undefined;
  /** When the deadline passed or a second signal came: kill what is left, free what is held. */
  force?: () => Promise<void>;
  /** Where "stopping…" lines go (the terminal of `mom up`); nothing when unset. */
  say?: (line: string) => void;
}

export const EXIT: Record<StopReason, number> = { SIGINT: 130, SIGTERM: 0, SIGHUP: 129, done: 0, "parent gone": 0 };

/** A terminal left in raw mode (a prompt for a hidden secret interrupted) is given back cooked. */
export function restoreTerminal(): void {
  const stdin = process.stdin as NodeJS.ReadStream;
  try {
    if (stdin.isTTY && stdin.isRaw) stdin.setRawMode(false);
  } catch {
    // stdin already closed
  }
}

const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
let startSignal: { reason?: StopReason; timer?: NodeJS.Timeout; handlers: [NodeJS.Signals | "disconnect", () => void][] } | undefined;

/**
 * From now until `shutdownOn`: a signal is kept, and the service stops as soon as it is up. Without
 * this, a SIGTERM while a deployed service started (a rollout, a pod deleted during a slow start)
 * met Node's default action: the process died mid-start with no exit code, nothing closed. A
 * second signal exits at once, and so does a start that has not finished 10 s after the first (it
 * may be waiting out an outage). So is the end of `mom up`'s IPC channel (its kill -9): heard only
 * later, a child of a `mom up` that died while the child started ran on, orphaned.
 */
export function keepSignalsWhileStarting(): void {
  const kept: NonNullable<typeof startSignal> = { handlers: [] };
  const keep = (reason: StopReason) => () => {
    if (kept.reason) process.exit(EXIT[kept.reason]);
    kept.reason = reason;
    kept.timer = setTimeout(() => {
      process.stderr.write(`mom: still starting 10 s after ${reason}; exiting without closing what has started\n`);
      process.exit(EXIT[reason]);
    }, 10_000).unref();
  };
  for (const signal of SIGNALS) kept.handlers.push([signal, keep(signal)]);
  if (process.channel) kept.handlers.push(["disconnect", keep("parent gone")]);
  for (const [event, handler] of kept.handlers) process.on(event as NodeJS.Signals, handler);
  startSignal = kept;
}

/**
 * Closes everything in reverse order on SIGINT/SIGTERM/SIGHUP, at `done`, or when the parent
 * process that holds this one's IPC channel goes away (`mom up`'s children), then exits. A second
 * signal, or the deadline, does not wait for the rest: `force` runs and the process exits, so a
 * service whose NATS vanished under it cannot hang on in the background.
 */
export function shutdownOn(o: ShutdownOptions): Promise<never> {
  return new Promise<never>(() => {
    let stopping: StopReason | undefined;
    let forcing = false;
    const exit = (code: number) => {
      restoreTerminal();
      process.exit(code);
    };
    const force = async (code: number) => {
      if (forcing) return;
      forcing = true;
      await o.force?.().catch((err) => process.stderr.write(`mom: shutdown: ${(err as Error).message}\n`));
      exit(code);
    };
    const stop = async (reason: StopReason) => {
      if (stopping) {
        // Ctrl-C again, or a SIGTERM after a Ctrl-C: stop waiting.
        if (reason !== "done") {
          o.say?.("mom: stopping now");
          void force(EXIT[stopping]);
        }
        return;
      }
      stopping = reason;
      const code = EXIT[reason];
      const deadline = o.deadlineMs?.(reason);
      if (deadline !== undefined) {
        setTimeout(() => {
          o.say?.(`mom: services did not stop within ${Math.round(deadline / 100) / 10} s; stopping them now`);
          void force(code);
        }, deadline).unref();
      }
      try {
        o.onStop?.(reason);
      } catch {
        // only a hint
      }
      for (const c of [...o.closers].reverse()) {
        if (forcing) return;
        await c().catch((err) => process.stderr.write(`mom: shutdown: ${(err as Error).message}\n`));
      }
      if (!forcing) exit(code);
    };
    for (const signal of SIGNALS) process.on(signal, () => void stop(signal));
    const early = startSignal;
    startSignal = undefined;
    for (const [event, handler] of early?.handlers ?? []) process.off(event as NodeJS.Signals, handler);
    clearTimeout(early?.timer);
    if (early?.reason) void stop(early.reason);
    // Started by `mom up` with an IPC channel: when that process is gone (even by kill -9), so is this one.
    if (process.channel) process.once("disconnect", () => void stop("parent gone"));
    void o.done?.then(() => stop("done"));
  });
}
