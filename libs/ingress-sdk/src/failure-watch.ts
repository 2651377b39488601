import type { Logger } from "pino";

/**
 * Readiness of a platform link whose client retries on its own, forever, while it looks "running"
 * (a polling loop, a sync loop): the first failure and the recovery are logged once each, and
 * `problem()` says since when it fails. `name` is how the log lines call it ("telegram
 * getUpdates"); the problem line starts it with a capital.
 */
export class FailureWatch {
  private failing?: { since: string; why: string };

  constructor(
    private readonly name: string,
    private readonly log: Logger,
  ) {}

  failed(why: string): void {
    if (this.failing) return;
    this.log.warn({ why }, `${this.name} failed (retrying): ${why}`);
    this.failing = { since: new Date().toISOString(), why };
  }

  works(): void {
    if (this.failing) this.log.info({ since: this.failing.since }, `${this.name} works again`);
    this.failing = undefined;
  }

  /** For the connection's `problem()`: undefined while it works. */
  problem(): string | undefined {
    if (!this.failing) return undefined;
    return `${this.name.charAt(0).toUpperCase()}${this.name.slice(1)} failing since ${this.failing.since}: ${this.failing.why}`;
  }
}
