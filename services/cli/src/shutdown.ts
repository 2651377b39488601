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
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => void stop(signal));
    // Started by `mom up` with an IPC channel: when that process is gone (even by kill -9), so is this one.
    if (process.channel) process.once("disconnect", () => void stop("parent gone"));
    void o.done?.then(() => stop("done"));
  });
}
