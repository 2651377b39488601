import type { LoadedConfig } from "@mom/config";
import type { Logger } from "pino";
import type { Clock } from "./clock.js";

export const SCHEDULER_OPTIONS = Symbol("SCHEDULER_OPTIONS");

export interface SchedulerOptions {
  loaded: LoadedConfig;
  logger: Logger;
  /** Wall time for due dates and lateness (tests pass a FakeClock). */
  clock?: Clock;
  /** A file that does not parse is judged once it stayed the same this long (default 1000 ms). */
  settleMs?: number;
  /** Pause before publishing again after NATS refused (default 5000 ms). */
  retryMs?: number;
}
