import type { Bus } from "@mom/bus";
import type { LoadedConfig } from "@mom/config";
import type { Logger } from "pino";

export const CONSOLE_OPTIONS = Symbol("CONSOLE_OPTIONS");

export interface ConsoleOptions {
  loaded: LoadedConfig;
  /** Connected, not provisioned: the console creates nothing on NATS. */
  bus: Bus;
  logger: Logger;
  /** How often what does not exist yet (no runner started) is looked for again (default 2000 ms). */
  retryMs?: number;
  /** A console redrive still running after this is stopped (default 5 minutes). */
  redriveTimeoutMs?: number;
}
