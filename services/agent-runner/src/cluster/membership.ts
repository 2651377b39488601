import type { KV, KvWatchEntry } from "@mom/bus";
import { RunnerHeartbeat, validator } from "@mom/contracts";
import pTimeout from "p-timeout";
import type { Logger } from "pino";
import { jsonOf, LiveWatch } from "./watch-bucket.js";

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
  /**
   * Without a heartbeat landing for this long this runner sets its channels down (default three
   * quarters of a lease): the others take them after a full lease of silence, so it must stop
   * writing before; and a leader election of the heartbeat bucket (4.1-8.8 s measured on a 3-node
   * cluster, docs/scaling.md) must fit in it with the heartbeat interval to spare.
   */
  setDownAfterMs?: number;
}

/** Why this process cannot tell who is alive right now: while any holds, nobody's silence counts. */
type Deafness = "disconnected" | "heartbeats not landing" | "watch behind";

interface Seen {
  hb: RunnerHeartbeat;
  /** When this process last heard it, on its own clock: no clock skew between machines matters. */
  at: number;
  /** The heartbeat's KV revision: a watch set up again replays it, and a replay is not news. */
  revision: number;
  /** When the server stored it (the server's clock). */
  created: number;
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
  private readonly watching: LiveWatch;
  private leaving = false;
  private stopped = false;
  /** Since when this process cannot hear (see Deafness), if it cannot now. */
  private deafSince?: number;
  private readonly deafness = new Set<Deafness>();
  /** When this process began to hear (its first complete view), moved on like the others' clocks. */
  private listeningSince?: number;

  constructor(private readonly o: MembershipOptions) {
    this.now = o.now ?? Date.now;
    this.lastBeatOk = this.now();
    this.watching = new LiveWatch({ kv: o.kv, what: "runner heartbeats", onEntry: (e) => this.onEntry(e), log: o.log, now: this.now, staleAfterMs: Math.max(1000, Math.floor(o.leaseMs / 5)) });
  }

  get id(): string {
    return this.o.id;
  }

  /** Puts the first heartbeat and reads everybody's; resolves when the initial view is complete. */
  async start(): Promise<void> {
    await this.beat();
    await this.watching.start();
    this.listeningSince = this.now();
    this.dateFirstView();
    this.schedule();
  }

  /**
   * The first view holds heartbeats put before this process started: each is as old as the server
   * says, measured against this runner's own heartbeat, put just before (both on the server's
   * clock, so no skew). Taken as "heard now", a runner that died a moment before this one started
   * would live another lease here — and be handed channels that nobody then reads.
   */
  private dateFirstView(): void {
    const own = this.seen.get(this.o.id)?.created;
    if (own === undefined) return;
    const now = this.now();
    for (const [id, s] of this.seen) if (id !== this.o.id) s.at = now - Math.max(0, own - s.created);
  }

  /** Whether this process's view of who is alive can be trusted now (see Deafness). */
  get vouched(): boolean {
    return this.deafness.size === 0 && this.watching.vouched;
  }

  /**
   * Checks the heartbeat watch is current (it must have brought this runner's own last heartbeat)
   * and sets it up again when it is not; meanwhile nobody's silence counts.
   */
  async check(): Promise<void> {
    const behind = this.watching.behindSince;
    if (behind === undefined) return;
    this.deaf("watch behind", behind);
    await this.watching.check();
    if (this.watching.vouched) this.hear("watch behind");
  }

  /** Sets the heartbeat watch up again now (what a watch found behind gets). */
  rewatch(): Promise<void> {
    return this.watching.restart("asked to");
  }

  /**
   * The connection is back (perhaps to another server): hears again once a heartbeat put now has
   * come back through the watch (set up again if it must be), not before.
   */
  async reconnected(): Promise<void> {
    await this.beat();
    await this.watching.caughtUp();
    this.hear("disconnected");
  }

  private onEntry(e: KvWatchEntry): void {
    if (e.operation !== "PUT") return void this.seen.delete(e.key);
    const parsed = checkHeartbeat.check(jsonOf(e.string()));
    const known = this.seen.get(e.key);
    if (!parsed.ok) this.o.log.warn({ key: e.key, reason: parsed.reason }, "ignoring an invalid runner heartbeat");
    else if (known?.revision === e.revision) known.hb = parsed.value;
    else this.seen.set(e.key, { hb: parsed.value, at: this.now(), revision: e.revision, created: e.created.getTime() });
  }

  /** This process cannot hear from now on, for `why` (until `hear(why)`). */
  deaf(why: Deafness = "disconnected", since = this.now()): void {
    this.deafness.add(why);
    this.deafSince = Math.min(this.deafSince ?? since, since);
  }

  /** `why` no longer holds; when nothing else does, the time spent deaf is forgiven. */
  hear(why: Deafness = "disconnected"): void {
    this.deafness.delete(why);
    if (this.deafness.size === 0) this.forgive();
  }

  /**
   * This process hears again: nobody's silence while it was deaf means they died, so every clock
   * moves on by that time. A runner already dead before stays dead (setting everybody to "just
   * heard" would give a dead runner another lease, and channels handed to it would wait).
   */
  private forgive(): void {
    if (this.deafSince === undefined) return;
    const now = this.now();
    const deafFor = now - this.deafSince;
    this.deafSince = undefined;
    for (const s of this.seen.values()) s.at = Math.min(now, s.at + deafFor);
    if (this.listeningSince !== undefined) this.listeningSince = Math.min(now, this.listeningSince + deafFor);
  }

  /** True while this runner's own heartbeats land: past setDownAfterMs without one it must stop writing. */
  get healthy(): boolean {
    return this.now() - this.lastBeatOk < (this.o.setDownAfterMs ?? (this.o.leaseMs * 3) / 4);
  }

  /** Heard within a lease, not counting time this process was deaf (while deaf, as of when it went deaf). */
  isAlive(id: string): boolean {
    if (id === this.o.id) return true;
    const s = this.seen.get(id);
    const now = this.deafSince ?? this.now();
    // Never heard: dead only once this process has listened for a whole lease. A runner that has
    // just started (or whose first heartbeat a new bucket refused) must not take channels from one
    // whose heartbeat it has not had the time to hear.
    if (s === undefined) return this.listeningSince === undefined || now - this.listeningSince < this.o.leaseMs;
    return now - s.at < this.o.leaseMs;
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
    this.stopped = true;
    clearTimeout(this.timer);
    this.watching.stop();
    await this.o.kv.delete(this.o.id).catch(() => {});
  }

  private heartbeat(): RunnerHeartbeat {
    return { id: this.o.id, channels: this.o.load(), startedAt: this.startedAt, ...(this.leaving && { leaving: true }) };
  }

  /** Every lease/8; after a failure again within a second, so a leader election costs as little of the lease as possible. */
  private schedule(afterFailure = false): void {
    if (this.stopped) return;
    const every = Math.max(100, Math.floor(this.o.leaseMs / 8));
    this.timer = setTimeout(() => void this.beat().then((ok) => this.schedule(!ok)), afterFailure ? Math.min(every, 1000) : every);
    this.timer.unref();
  }

  private async beat(): Promise<boolean> {
    try {
      const timeout = Math.max(1000, Math.min(5000, Math.floor(this.o.leaseMs / 5)));
      // Our own deadline too: a put in flight when the connection moved to another server was seen
      // to hang past its own timeout (13 s without a word), and no heartbeat followed it meanwhile.
      const revision = await pTimeout(this.o.kv.put(this.o.id, JSON.stringify(this.heartbeat()), { timeout }), { milliseconds: timeout + 500, message: `the heartbeat put took over ${timeout + 500} ms` });
      this.lastBeatOk = this.now();
      // The watch must bring this heartbeat back: that is how it is known to be current.
      this.watching.expect(revision);
      this.hear("heartbeats not landing");
      return true;
    } catch (err) {
      // Nobody's heartbeat lands either (a leader election, an outage): their silence is no evidence.
      this.deaf("heartbeats not landing");
      this.o.log.warn({ err }, "could not put the runner heartbeat");
      return false;
    }
  }
}

