import { type Logger as BoltLogger, LogLevel } from "@slack/bolt";
import type { Logger } from "pino";

const fmt = (msg: unknown[]) => msg.map((m) => (typeof m === "string" ? m : m instanceof Error ? m.message : JSON.stringify(m))).join(" ");
/** Bolt's level for pino's (anything above warn: error). */
const LEVELS: Record<string, LogLevel> = { trace: LogLevel.DEBUG, debug: LogLevel.DEBUG, info: LogLevel.INFO, warn: LogLevel.WARN };

/** Bolt / web-api / socket-mode logging into the service's pino logger. */
export function boltLogger(log: Logger): BoltLogger {
  return {
    debug: (...m: unknown[]) => log.debug(fmt(m)),
    info: (...m: unknown[]) => log.info(fmt(m)),
    warn: (...m: unknown[]) => log.warn(fmt(m)),
    error: (...m: unknown[]) => log.error(fmt(m)),
    setLevel: () => {},
    getLevel: () => LEVELS[log.level] ?? LogLevel.ERROR,
    setName: () => {},
  };
}
