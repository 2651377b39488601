import type { ChannelRecord } from "@mom/contracts";
import { createHash } from "node:crypto";
import pRetry from "p-retry";
import type { Logger } from "pino";
import { type ChannelDirectory, RecordConflict, type Versioned } from "./channel-directory.js";
import type { Membership } from "./membership.js";

export interface OwnershipHooks {
  /** The record now names this runner: start reading the channel from record.doneSeq + 1. */
  acquire(key: string, v: Versioned): void;
  /** The record names somebody else now: stop at once, write nothing more. */
  lose(key: string): void;
  /** This runner holds more than its share: give `key` to `to` at its next run boundary. */
  handOff(key: string, to: string): void;
  /** Keys this runner owns, least busy first (the balancer gives those away first). */
  owned(): string[];
  isOwned(key: string): boolean;
}

export interface OwnershipOptions {
  membership: Membership;
  directory: ChannelDirectory;
  log: Logger;
  /** Creation time of MOM_IN now: a record from an earlier incarnation of the stream starts over. */
  streamCreated: () => string;
  hooks: OwnershipHooks;
}

/**
 * Decides who owns which channel (docs/scaling.md). Every decision is a compare-and-set on the
 * channel's record, so two runners acting on stale views cannot both win:
 * - a message for a channel nobody (alive) owns assigns it to the least-loaded live runner;
 * - a dead runner's channels, and unowned channels with work left, are assigned the same way;
 * - a runner holding more than ceil(total / runners) channels hands the surplus to the
 *   least-loaded one, at run boundaries.
 */
export class Ownership {
  private readonly handing = new Map<string, string>();

  constructor(private readonly o: OwnershipOptions) {}

  /** The directory's change listener: a record naming this runner is a channel to read. */
  onRecord(key: string, v: Versioned | undefined): void {
    const mine = v?.record.owner === this.me;
    if (mine && !this.o.hooks.isOwned(key)) this.o.hooks.acquire(key, v!);
    else if (!mine && this.o.hooks.isOwned(key)) this.o.hooks.lose(key);
  }

  private load(id: string): number {
    let promised = 0;
    for (const to of this.handing.values()) if (to === id) promised++;
    return this.o.directory.ownedBy(id) + promised;
  }

  /** Both views (heartbeats, channel records) are current enough to act on. */
  get vouched(): boolean {
    return this.o.membership.vouched && this.o.directory.vouched;
  }

  get me(): string {
    return this.o.membership.id;
  }

  /** The runner a channel should go to now: the least loaded live one (hash breaks ties evenly). */
  target(key: string, exclude?: string): string | undefined {
    let best: { id: string; load: number; tie: string } | undefined;
    for (const r of this.o.membership.assignable()) {
      if (r.id === exclude) continue;
      const load = this.load(r.id);
      const tie = createHash("sha1").update(`${key}\n${r.id}`).digest("hex");
      if (!best || load < best.load || (load === best.load && tie < best.tie)) best = { id: r.id, load, tie };
    }
    return best?.id;
  }

  /**
   * Makes sure a live runner owns the channel of an incoming message. Resolves once some live
   * runner does (the message is then safe to acknowledge: its owner reads the channel from its
   * record's doneSeq). `firstDoneSeq` is where a channel never seen before starts.
   */
  async ensureOwner(key: string, firstDoneSeq: () => Promise<number>): Promise<void> {
    // Compare-and-set, tried again at once after a lost race (5 attempts); other failures end it.
    try {
      await pRetry(
        async (attempt) => {
          // The mirror first (cheap, nearly always right); after a lost race, what is stored.
          const have = (attempt === 1 ? this.o.directory.get(key) : undefined) ?? (await this.o.directory.read(key));
          const fresh = have && have.record.streamCreated === this.o.streamCreated() ? have : undefined;
          if (fresh?.record.owner && this.o.membership.isAlive(fresh.record.owner)) return;
          // Who is alive and who owns what may be out of date (a NATS failover): decide nothing on it.
          if (!this.vouched) throw new Error(`the view of runners and channels is not current (NATS failover?); channel ${key} is assigned once it is`);
          const to = this.target(key);
          if (!to) throw new Error("no live runner to give the channel to");
          const base: ChannelRecord = fresh?.record ?? { owner: null, doneSeq: await firstDoneSeq(), streamCreated: this.o.streamCreated() };
          await this.o.directory.write(key, assign(base, to), have?.revision ?? 0);
          this.o.log.info({ channel: key, owner: to, doneSeq: base.doneSeq, from: have?.record.owner ?? null }, "channel assigned");
        },
        { retries: 4, minTimeout: 0, shouldRetry: ({ error }) => error instanceof RecordConflict },
      );
    } catch (err) {
      if (err instanceof RecordConflict) throw new Error(`could not settle an owner for channel ${key} (kept changing)`, { cause: err });
      throw err;
    }
  }

  /** One round of housekeeping: take over dead runners' channels, give away surplus ones. */
  async tick(): Promise<void> {
    const { membership, directory } = this.o;
    // Own heartbeats not landing, or a view that may be behind: judge nobody, move nothing.
    if (!membership.healthy || !this.vouched) return;
    const orphans: [string, Versioned][] = [];
    for (const [key, v] of directory.entries()) {
      const owner = v.record.owner;
      if (owner ? !membership.isAlive(owner) : v.record.pending) orphans.push([key, v]);
    }
    for (const [key, v] of orphans) {
      const to = this.target(key);
      if (!to) break;
      try {
        await directory.write(key, assign(v.record, to), v.revision);
        this.o.log.info({ channel: key, from: v.record.owner, owner: to, doneSeq: v.record.doneSeq }, v.record.owner ? "took over a dead runner's channel" : "assigned an orphaned channel with work left");
      } catch (err) {
        if (!(err instanceof RecordConflict)) this.o.log.warn({ err, channel: key }, "could not reassign channel");
      }
    }
    this.rebalance();
  }

  /** Picks who gets a channel this runner gives away (shutdown), counting the ones already promised. */
  planHandOff(key: string): string | null {
    const to = this.target(key, this.me);
    if (to) this.handing.set(key, to);
    return to ?? null;
  }

  /** A handoff finished (or was abandoned): the channel may be balanced again. */
  handedOff(key: string): void {
    this.handing.delete(key);
  }

  private rebalance(): void {
    const runners = this.o.membership.assignable();
    if (runners.length < 2 || !runners.some((r) => r.id === this.me)) return;
    const total = runners.reduce((n, r) => n + this.o.directory.ownedBy(r.id), 0);
    const fair = Math.ceil(total / runners.length);
    let surplus = this.o.directory.ownedBy(this.me) - this.handing.size - fair;
    for (const key of this.o.hooks.owned()) {
      if (surplus <= 0) break;
      if (this.handing.has(key)) continue;
      const to = this.target(key, this.me);
      if (!to || this.load(to) + 1 > fair) break;
      this.handing.set(key, to);
      surplus--;
      this.o.hooks.handOff(key, to);
    }
  }
}

function assign(r: ChannelRecord, owner: string): ChannelRecord {
  const { pending: _, ...rest } = r;
  return { ...rest, owner };
}
