import { type Logger as BoltLogger, LogLevel } from "@slack/bolt";
import type { Logger } from "pino";

const fmt = (msg: unknown[]) => msg.map((m) => (typeof m === "string" ? m : m instanceof Error ? m.message : JSON.stringify(m))).join(" ");

/** Bolt / web-api / socket-mode logging into the service's pino logger. */
export function boltLogger(log: Logger): BoltLogger {
  const level = (): LogLevel => {
    const l = log.level;
    if (l === "debug" || l === "trace") return LogLevel.DEBUG;
    if (l === "info") return LogLevel.INFO;
    if (l === "warn") return LogLevel.WARN;
    return LogLevel.ERROR;
  };
  return {
    debug: (...m: unknown[]) => log.debug(fmt(m)),
    info: (...m: unknown[]) => log.info(fmt(m)),
    warn: (...m: unknown[]) => log.warn(fmt(m)),
    error: (...m: unknown[]) => log.error(fmt(m)),
    setLevel: () => {},
    getLevel: level,
    setName: () => {},
  };
}
