import type { KV } from "@mom/bus";
import { RunnerHeartbeat, validator } from "@mom/contracts";
import type { Logger } from "pino";
import { jsonOf, watchBucket } from "./watch-bucket.js";

const checkHeartbeat = validator(RunnerHeartbeat);

export interface MembershipOptions {
  kv: KV;
  id: string;
  /** A runner not heard from for this long is dead; its channels go to the others. */
  leaseMs: number;
  /** How many channels this runner owns now (sent with every heartbeat). */
  load: () => number;
  log: Logger;
  /** This process's clock (tests move it by hand). */
  now?: () => number;
}

interface Seen {
  hb: RunnerHeartbeat;
  /** When this process last heard it, on its own clock: no clock skew between machines matters. */
  at: number;
  /** The heartbeat's KV revision: a watch set up again replays it, and a replay is not news. */
  revision: number;
}

/**
 * Which runners are alive. Each runner puts a heartbeat into a TTL'd KV bucket every leaseMs/5 and
 * watches everybody's. Liveness is judged by when *this* process last heard a runner, and time
 * this process could not hear anything (its own disconnect) never counts against the others.
 */
export class Membership {
  private readonly seen = new Map<string, Seen>();
  private readonly startedAt = new Date().toISOString();
  private readonly now: () => number;
  private lastBeatOk: number;
  private timer?: NodeJS.Timeout;
  private watching?: { stop(): void };
  private leaving = false;
  /** Since when this process hears nothing (disconnected), if it is deaf now. */
  private deafSince?: number;

  constructor(private readonly o: MembershipOptions) {
    this.now = o.now ?? Date.now;
    this.lastBeatOk = this.now();
  }

  get id(): string {
    return this.o.id;
  }

  /** Puts the first heartbeat and reads everybody's; resolves when the initial view is complete. */
  async start(): Promise<void> {
    await this.beat();
    await this.watch();
    this.timer = setInterval(() => void this.beat(), Math.max(100, Math.floor(this.o.leaseMs / 5)));
    this.timer.unref();
  }

  /** Watches the heartbeats anew (after a reconnect the old watch may be stale). */
  async watch(): Promise<void> {
    this.watching?.stop();
    this.watching = await watchBucket(
      this.o.kv,
      (e) => {
        if (e.operation !== "PUT") return void this.seen.delete(e.key);
        const parsed = checkHeartbeat.check(jsonOf(e.string()));
        const known = this.seen.get(e.key);
        if (!parsed.ok) this.o.log.warn({ key: e.key, reason: parsed.reason }, "ignoring an invalid runner heartbeat");
        else if (known?.revision === e.revision) known.hb = parsed.value;
        else this.seen.set(e.key, { hb: parsed.value, at: this.now(), revision: e.revision });
      },
      this.o.log,
    );
  }

  /** This process stopped hearing anything (it lost the connection) from now on. */
  deaf(): void {
    this.deafSince ??= this.now();
  }

  /**
   * This process hears again: nobody's silence while it was deaf means they died, so every clock
   * moves on by that time. A runner already dead before stays dead (setting everybody to "just
   * heard" would give a dead runner another lease, and channels handed to it would wait).
   */
  forgive(): void {
    if (this.deafSince === undefined) return;
    const now = this.now();
    const deafFor = now - this.deafSince;
    this.deafSince = undefined;
    for (const s of this.seen.values()) s.at = Math.min(now, s.at + deafFor);
  }

  /** True while this runner's own heartbeats land: past half a lease without one it must stop writing. */
  get healthy(): boolean {
    return this.now() - this.lastBeatOk < this.o.leaseMs / 2;
  }

  isAlive(id: string): boolean {
    if (id === this.o.id) return true;
    const s = this.seen.get(id);
    return s !== undefined && this.now() - s.at < this.o.leaseMs;
  }

  /** Live runners that may be given channels (not shutting down), with their reported load. */
  assignable(): RunnerHeartbeat[] {
    const out: RunnerHeartbeat[] = [];
    for (const [id] of this.seen) {
      const s = this.seen.get(id)!;
      if (id !== this.o.id && this.isAlive(id) && !s.hb.leaving) out.push(s.hb);
    }
    if (!this.leaving) out.push(this.heartbeat());
    return out;
  }

  /** Marks this runner as leaving (no new channels) and publishes that at once. */
  async leave(): Promise<void> {
    this.leaving = true;
    await this.beat();
  }

  /** Stops heartbeating and removes this runner's key, so the others need not wait a lease. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.watching?.stop();
    await this.o.kv.delete(this.o.id).catch(() => {});
  }

  private heartbeat(): RunnerHeartbeat {
    return { id: this.o.id, channels: this.o.load(), startedAt: this.startedAt, ...(this.leaving && { leaving: true }) };
  }

  private async beat(): Promise<void> {
    try {
      await this.o.kv.put(this.o.id, JSON.stringify(this.heartbeat()));
      this.lastBeatOk = this.now();
    } catch (err) {
      this.o.log.warn({ err }, "could not put the runner heartbeat");
    }
  }
}

