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
  return pino(options(name, opts.level ?? "info"), destination);
}

function options(service: string, level: string) {
  return {
    level,
    base: { service, pid: process.pid, hostname: hostname() },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Level names rather than numbers: readable in `kubectl logs` without a pretty-printer.
    formatters: { level: (label: string) => ({ level: label }) },
  };
}

/**
 * The logger of another service sharing `parent`'s destination and level (`mom up` runs the
 * runner, the scheduler and the terminal chat in one process, writing one file). Not
 * `parent.child({service})`: pino would write the key twice on every line.
 */
export function serviceLogger(parent: Logger, service: string): Logger {
  const stream = (parent as unknown as Record<symbol, pino.DestinationStream>)[pino.symbols.streamSym];
  return pino(options(service, parent.level), stream);
}
