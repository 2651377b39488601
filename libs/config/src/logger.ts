import { hostname } from "node:os";
import { pino, type Logger } from "pino";

export type { Logger };

export interface LoggerOptions {
  level?: string;
  /** A stream, or a file descriptor; default 2 (stderr) so stdout stays free for program output. */
  destination?: NodeJS.WritableStream | number;
}

/**
 * One JSON object per line with `service` on every line; request-scoped fields (`channel`,
 * `runId`, `msgId`) come from `logger.child({...})`.
 */
export function createLogger(name: string, opts: LoggerOptions = {}): Logger {
  const destination =
    typeof opts.destination === "object"
      ? opts.destination
      : // Synchronous writes: the last lines before a crash are the ones that explain it.
        pino.destination({ fd: opts.destination ?? 2, sync: true });
  return pino(
    {
      level: opts.level ?? "info",
      base: { service: name, pid: process.pid, hostname: hostname() },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Level names rather than numbers: readable in `kubectl logs` without a pretty-printer.
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
