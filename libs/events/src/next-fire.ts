import type { ScheduledEvent } from "./event-file.js";

/**
 * When a valid event fires next, as the scheduler computes it: a one-shot at its `at` (also when
 * that has passed: the scheduler fires it late within its grace period), a periodic at its first
 * tick strictly after `nowMs` (undefined when it has none left), an immediate one at `writtenAtMs`
 * (its file's modification time, the same on every replica; now when not given).
 */
export function nextFireTime(event: ScheduledEvent, nowMs: number, writtenAtMs = nowMs): number | undefined {
  switch (event.type) {
    case "immediate":
      return Math.floor(writtenAtMs);
    case "one-shot":
      return event.atMs;
    case "periodic":
      return event.cron.nextAfter(new Date(nowMs))?.getTime();
  }
}
