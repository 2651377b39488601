import { closeSync, existsSync, openSync, readSync, statSync, unwatchFile, watchFile } from "node:fs";
import { join } from "node:path";
import { prettyFactory } from "pino-pretty";
import { CommandError } from "./command-error.js";

export interface LogsOptions {
  data: string;
  service?: string;
  channel?: string;
  level?: string;
  follow?: boolean;
  json?: boolean;
  /** Only the last N matching lines of what is there now. */
  lines?: string;
  color?: boolean;
}

const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const;
const NUMERIC: Record<number, string> = { 10: "trace", 20: "debug", 30: "info", 40: "warn", 50: "error", 60: "fatal" };
/** How often a followed log is looked at (fs.watchFile polls: it works on every file system, NFS too). */
const FOLLOW_INTERVAL_MS = 200;

export function logFileOf(dataDir: string): string {
  return join(dataDir, "logs", "mom.log");
}

/** Which lines to show: a service (or a prefix such as `ingress`), a channel (or a whole adapter), a lowest level. */
export function lineFilter(o: Pick<LogsOptions, "service" | "channel" | "level">): (line: string) => boolean {
  const min = o.level === undefined ? 0 : LEVELS.indexOf(o.level.toLowerCase() as (typeof LEVELS)[number]);
  if (min < 0) throw new CommandError(`--level: expected one of ${LEVELS.join(", ")}, got ${JSON.stringify(o.level)}`);
  const any = o.service === undefined && o.channel === undefined && min === 0;
  return (line) => {
    let rec: Record<string, unknown>;
    try {
      rec = JSON.parse(line) as Record<string, unknown>;
    } catch {
      // A line that is not JSON (an ingress child's own output) shows only when nothing is filtered.
      return any;
    }
    if (o.service !== undefined) {
      const s = String(rec.service ?? "");
      if (s !== o.service && !s.startsWith(`${o.service}-`)) return false;
    }
    if (o.channel !== undefined) {
      const c = String(rec.channel ?? "");
      if (c !== o.channel && !c.startsWith(`${o.channel}/`)) return false;
    }
    if (min > 0) {
      const level = typeof rec.level === "number" ? NUMERIC[rec.level] : String(rec.level ?? "");
      if (LEVELS.indexOf(level as (typeof LEVELS)[number]) < min) return false;
    }
    return true;
  };
}

/** pino-pretty, with the service and channel before the message. */
export function prettyPrinter(color: boolean): (line: string) => string {
  const pretty = prettyFactory({
    colorize: color,
    translateTime: "SYS:yyyy-mm-dd HH:MM:ss.l",
    ignore: "pid,hostname,service,channel",
    messageFormat: "{service}{if channel} {channel}{end}: {msg}",
  });
  return (line) => {
    try {
      JSON.parse(line);
    } catch {
      return `${line}\n`;
    }
    return pretty(line);
  };
}

/**
 * `mom logs`: the data dir's log (data/logs/mom.log, what `mom up` and its ingresses write),
 * pretty-printed and filtered; `-f` keeps printing what is appended (also across truncation).
 */
export async function logsCommand(o: LogsOptions, write: (text: string) => void, stop?: AbortSignal): Promise<number> {
  const file = logFileOf(o.data);
  if (!existsSync(file) && !o.follow) throw new CommandError(`no log at ${file}: \`mom up\` writes it (\`mom runner\` and the other services log to stderr)`);
  const keep = lineFilter(o);
  const show = o.json ? (line: string) => `${line}\n` : prettyPrinter(o.color ?? false);
  let last: number | undefined;
  if (o.lines !== undefined) {
    last = Number(o.lines);
    if (!Number.isInteger(last) || last < 0) throw new CommandError(`-n/--lines: expected a number of lines, got ${JSON.stringify(o.lines)}`);
  }
  let offset = 0;
  let partial = "";
  const readNew = (): string[] => {
    if (!existsSync(file)) return [];
    const size = statSync(file).size;
    if (size < offset) {
      // Truncated or replaced: start again at its beginning.
      offset = 0;
      partial = "";
    }
    if (size === offset) return [];
    const fd = openSync(file, "r");
    try {
      const out: string[] = [];
      const buf = Buffer.alloc(1 << 20);
      while (offset < size) {
        const n = readSync(fd, buf, 0, Math.min(buf.length, size - offset), offset);
        if (n <= 0) break;
        offset += n;
        const text = partial + buf.subarray(0, n).toString("utf8");
        const parts = text.split("\n");
        partial = parts.pop() ?? "";
        out.push(...parts.filter((l) => l.trim() !== ""));
      }
      return out;
    } finally {
      closeSync(fd);
    }
  };
  let first = readNew().filter(keep);
  if (last !== undefined) first = first.slice(Math.max(0, first.length - last));
  for (const line of first) write(show(line));
  if (!o.follow) return 0;
  await new Promise<void>((resolve) => {
    const look = () => {
      for (const line of readNew()) if (keep(line)) write(show(line));
    };
    watchFile(file, { interval: FOLLOW_INTERVAL_MS }, look);
    const end = () => {
      unwatchFile(file, look);
      resolve();
    };
    if (stop?.aborted) return end();
    stop?.addEventListener("abort", end, { once: true });
    if (!stop) {
      process.once("SIGINT", end);
      process.once("SIGTERM", end);
    }
  });
  return 0;
}
