import { type Bus, followFrom, type KV, namespacedName, toEntry, type Watching } from "@mom/bus";
import {
  ChannelRecord,
  channelsBucket,
  limitsBucket,
  parseChannelKey,
  parsePayload,
  qualifiedChannelId,
  RunnerHeartbeat,
  runnersBucket,
  UsageRecord,
  validator,
} from "@mom/contracts";
import type { Logger } from "pino";
import { LimitOverrides, monthStart } from "@mom/usage";
import { type LiveState, startOfUtcDay } from "./live-state.js";
import type { SpendBook } from "./spend-book.js";

const checkHeartbeat = validator(RunnerHeartbeat);
const checkRecord = validator(ChannelRecord);
const checkUsage = validator(UsageRecord);

/**
 * Feeds a LiveState from NATS, reading only: the runners' heartbeat and channel-ownership buckets
 * (opened, never created: they are the runners'), today's MOM_OUT from the start of the UTC day on,
 * and this month's MOM_USAGE (the spend book; today's records also to the live state). What does not exist yet (no runner has started) is looked for again every
 * `retryMs` until it does.
 */
export class BusFeed {
  private readonly stops: Array<() => Promise<void> | void> = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private stopped = false;
  private watchers = 0;

  constructor(
    private readonly bus: Bus,
    private readonly state: LiveState,
    private readonly log: Logger,
    private readonly o: {
      retryMs?: number;
      now?: () => Date;
      spend?: SpendBook;
      /** Opens the spend limit overrides (the runners make the bucket when config.json sets limits) and hands them over. */
      limits?: (overrides: LimitOverrides) => void;
    } = {},
  ) {}

  /** How many of the sources are being read (4, 5 with the limit overrides, when all exist). */
  get live(): number {
    return this.watchers;
  }

  async start(): Promise<void> {
    const ns = this.bus.subjects.namespace;
    const now = (this.o.now ?? (() => new Date()))();
    const since = startOfUtcDay(now);
    await Promise.all([
      this.whenThere(`bucket ${runnersBucket(ns)}`, () => this.watchRunners(runnersBucket(ns))),
      this.whenThere(`bucket ${channelsBucket(ns)}`, () => this.watchChannels(channelsBucket(ns))),
      this.whenThere(`stream ${this.bus.subjects.stream("OUT")}`, () =>
        this.follow(this.bus.subjects.stream("OUT"), this.bus.subjects.wildcard("out"), since, (m) => this.state.outbound(toEntry(m, this.bus.subjects))),
      ),
      this.whenThere(`stream ${namespacedName(this.bus, "USAGE")}`, () =>
        this.follow(namespacedName(this.bus, "USAGE"), `${ns}.usage.>`, monthStart(now), (m) => {
          const r = parsePayload(checkUsage, m.text);
          if (!r.ok) return;
          this.o.spend?.add(r.value);
          if (Date.parse(r.value.ts) >= since.getTime()) this.state.usageRecord(r.value);
        }),
      ),
      ...(this.o.limits ? [this.whenThere(`bucket ${limitsBucket(ns)}`, () => this.openLimits(this.o.limits!))] : []),
    ]);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    for (const s of this.stops.splice(0)) await s();
  }

  /** Runs `open` now, and again every retryMs while what it reads does not exist; resolves after the first try. */
  private async whenThere(what: string, open: () => Promise<boolean>): Promise<void> {
    const attempt = async (): Promise<void> => {
      if (this.stopped) return;
      let ok = false;
      try {
        ok = await open();
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, `console cannot read ${what} yet; trying again`);
      }
      if (ok) this.watchers++;
      else if (!this.stopped) this.timers.push(setTimeout(() => void attempt(), this.o.retryMs ?? 2000).unref());
    };
    await attempt();
  }

  private async follow(stream: string, filter: string, since: Date, onMessage: Parameters<typeof followFrom>[4]): Promise<boolean> {
    if (!(await this.bus.hasStream(stream))) return false;
    const w: Watching = await followFrom(this.bus, stream, filter, { time: since }, onMessage);
    this.stops.push(() => w.stop());
    return true;
  }

  private async watchKv(bucket: string, onEntry: (key: string, json: unknown, created: Date, deleted: boolean) => void): Promise<KV | undefined> {
    const kv = await this.bus.existingKeyValue(bucket);
    if (!kv) return undefined;
    const iter = await kv.watch();
    void (async () => {
      for await (const e of iter) {
        const deleted = e.operation !== "PUT" || e.length === 0;
        let json: unknown;
        if (!deleted) {
          try {
            json = e.json();
          } catch {
            json = undefined;
          }
        }
        onEntry(e.key, json, e.created, deleted);
      }
    })().catch((err: unknown) => this.log.warn({ err: (err as Error).message, bucket }, "console stopped watching a bucket"));
    this.stops.push(() => iter.stop());
    return kv;
  }

  private async openLimits(take: (o: LimitOverrides) => void): Promise<boolean> {
    const o = await LimitOverrides.open(this.bus, {
      create: false,
      onChange: (key, _value, problem) => {
        if (problem) this.log.warn({ key, problem }, "spend limit override ignored");
      },
    });
    if (!o) return false;
    this.stops.push(() => o.close());
    take(o);
    return true;
  }

  private async watchRunners(bucket: string): Promise<boolean> {
    const kv = await this.watchKv(bucket, (key, json, created, deleted) => {
      const hb = deleted ? undefined : parsePayload(checkHeartbeat, JSON.stringify(json ?? null));
      this.state.heartbeat(key, hb?.ok ? hb.value : undefined, created.toISOString());
    });
    if (!kv) return false;
    // Expired heartbeats vanish from the bucket without a delete on the watch: drop them by age.
    const ttlMs = (await kv.status()).ttl || 20_000;
    const tick = setInterval(() => this.state.expireRunners(ttlMs), Math.max(250, Math.min(ttlMs / 4, 2000))).unref();
    this.stops.push(() => clearInterval(tick));
    return true;
  }

  private async watchChannels(bucket: string): Promise<boolean> {
    const kv = await this.watchKv(bucket, (key, json, _created, deleted) => {
      let channel: string;
      try {
        channel = qualifiedChannelId(parseChannelKey(key));
      } catch {
        return; // not a channel record
      }
      const rec = deleted ? undefined : parsePayload(checkRecord, JSON.stringify(json ?? null));
      this.state.channelRecord(channel, rec?.ok ? rec.value : undefined);
    });
    return kv !== undefined;
  }
}
