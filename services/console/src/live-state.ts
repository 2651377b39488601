import { EventEmitter } from "node:events";
import type { BusEntry } from "@mom/bus";
import type { ChannelRecord, OutboundEvent, RunnerHeartbeat, UsageRecord } from "@mom/contracts";

// What the overview shows, kept in memory from the bus: the runners' heartbeats and the channel
// ownership records (KV watches), and today's outbound events and usage records (stream
// followers). Folding is synchronous and separate from NATS so that it is tested on its own.

export type ChannelState = "idle" | "running" | "queued" | "waiting for approval";

type Ev<T extends OutboundEvent["event"]["type"]> = Extract<OutboundEvent["event"], { type: T }>;

export interface RunSummary {
  runId: string;
  channel: string;
  startedAt: string;
  triggerUser: string;
  triggerText: string;
  model: string;
  endedAt?: string;
  stopReason?: string;
  errorMessage?: string;
  durationMs?: number;
}

export interface PendingApproval {
  channel: string;
  runId: string;
  askedAt: string;
  event: Ev<"approval_requested">;
}

export interface ChannelView {
  channel: string;
  state: ChannelState;
  /** Runner id owning it, null when unowned, undefined when the ownership bucket has no record. */
  owner?: string | null;
  activeRunId?: string;
  queued: number;
  runsToday: number;
  errorsToday: number;
  costToday: number;
  lastActivity?: string;
}

export interface RunnerView {
  id: string;
  startedAt: string;
  leaving: boolean;
  /** When its heartbeat was last written. */
  seenAt: string;
  owns: string[];
}

export interface Summary {
  runners: RunnerView[];
  channelCount: number;
  runsToday: number;
  errorsToday: number;
  costToday: number;
  pending: PendingApproval[];
  recentRuns: RunSummary[];
  /** The UTC day the counts are of (YYYY-MM-DD). */
  day: string;
}

export interface Overview extends Summary {
  channels: ChannelView[];
}

interface ChannelFold {
  activeRunId?: string;
  queued: Set<string>;
  lastActivity?: string;
}

/** Start of the UTC day `now` is in. */
export function startOfUtcDay(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

const KEEP_RUNS_MS = 2 * 24 * 3600_000;

/** The part of the overview a change touches: these channels' rows (maybe none), and the page's small sections. */
export type ChangedChannels = readonly string[];

export class LiveState extends EventEmitter<{ change: [channels: ChangedChannels] }> {
  private readonly runners = new Map<string, { hb: RunnerHeartbeat; seenAt: string }>();
  private readonly records = new Map<string, ChannelRecord>();
  private readonly channels = new Map<string, ChannelFold>();
  private readonly runs = new Map<string, RunSummary>();
  /** Run ids by channel, so that one row is computed without scanning every run. */
  private readonly runsOf = new Map<string, Set<string>>();
  private readonly pending = new Map<string, PendingApproval>();
  private readonly usage: Array<{ ts: string; channel: string; runId?: string; cost: number }> = [];
  /** The same usage entries by channel, in the same order. */
  private readonly usageOf = new Map<string, Array<{ ts: string; cost: number }>>();
  /** Counts every change: a page rendered at version v has missed nothing while it is still v. */
  private changes = 0;

  constructor(private readonly now: () => Date = () => new Date()) {
    super();
  }

  get version(): number {
    return this.changes;
  }

  private changed(channels: ChangedChannels): void {
    this.changes++;
    this.emit("change", channels);
  }

  /** A heartbeat was written (value) or removed (undefined). */
  heartbeat(id: string, value: RunnerHeartbeat | undefined, writtenAt = this.now().toISOString()): void {
    if (value) this.runners.set(id, { hb: value, seenAt: writtenAt });
    else this.runners.delete(id);
    this.changed([]);
  }

  /** A channel's ownership record, by qualified channel id (undefined: removed). */
  channelRecord(channel: string, value: ChannelRecord | undefined): void {
    if (value) this.records.set(channel, value);
    else this.records.delete(channel);
    this.changed([channel]);
  }

  /** Heartbeats older than `ttlMs` (their bucket's TTL; the server drops them without telling a watch). */
  expireRunners(ttlMs: number): void {
    const cutoff = this.now().getTime() - ttlMs;
    let changed = false;
    for (const [id, r] of this.runners) if (Date.parse(r.seenAt) < cutoff) changed = this.runners.delete(id) || changed;
    if (changed) this.changed([]);
  }

  usageRecord(r: UsageRecord): void {
    this.usage.push({ ts: r.ts, channel: r.channel, ...(r.runId && { runId: r.runId }), cost: r.costUsd });
    const mine = this.usageOf.get(r.channel) ?? [];
    this.usageOf.set(r.channel, mine);
    mine.push({ ts: r.ts, cost: r.costUsd });
    this.changed([r.channel]);
  }

  /** One outbound event as stored (`entry.kind === "out"`); anything else is ignored. */
  outbound(entry: BusEntry): void {
    if (entry.kind !== "out" || !("data" in entry) || !entry.channel) return;
    const o = entry.data as OutboundEvent;
    const channel = entry.channel;
    const fold = this.channels.get(channel) ?? { queued: new Set<string>() };
    this.channels.set(channel, fold);
    fold.lastActivity = entry.time;
    const ev = o.event;
    switch (ev.type) {
      case "run_queued":
        fold.queued.add(ev.trigger.messageId);
        break;
      case "run_rejected":
        fold.queued.delete(ev.trigger.messageId);
        break;
      case "run_started":
        fold.queued.delete(ev.trigger.messageId);
        fold.activeRunId = o.runId;
        this.runs.set(o.runId, { runId: o.runId, channel, startedAt: entry.time, triggerUser: ev.trigger.username, triggerText: ev.trigger.text, model: ev.model });
        this.runsOf.set(channel, (this.runsOf.get(channel) ?? new Set()).add(o.runId));
        break;
      case "approval_requested":
        this.pending.set(ev.approvalId, { channel, runId: o.runId, askedAt: entry.time, event: ev });
        break;
      case "approval_resolved":
        this.pending.delete(ev.approvalId);
        break;
      case "run_ended": {
        if (fold.activeRunId === o.runId) fold.activeRunId = undefined;
        for (const [id, p] of this.pending) if (p.runId === o.runId) this.pending.delete(id);
        const run = this.runs.get(o.runId);
        if (run) Object.assign(run, { endedAt: entry.time, stopReason: ev.stopReason, durationMs: ev.durationMs, ...(ev.errorMessage && { errorMessage: ev.errorMessage }) });
        break;
      }
      default:
        return; // deltas and steps change nothing the overview shows
    }
    this.prune();
    this.changed([channel]);
  }

  private prune(): void {
    const cutoff = this.now().getTime() - KEEP_RUNS_MS;
    for (const [id, r] of this.runs) {
      if (Date.parse(r.startedAt) >= cutoff) break; // in start order: the rest are newer
      this.runs.delete(id);
      this.runsOf.get(r.channel)?.delete(id);
    }
    while (this.usage.length && Date.parse(this.usage[0]!.ts) < cutoff) this.usageOf.get(this.usage.shift()!.channel)?.shift();
  }

  /** A pending approval by id (undefined once resolved, expired or its run ended). */
  approval(approvalId: string): PendingApproval | undefined {
    return this.pending.get(approvalId);
  }

  /** Every channel the overview lists, sorted. */
  channelNames(): string[] {
    return [...new Set([...this.channels.keys(), ...this.records.keys()])].sort();
  }

  /** One channel's row; undefined when the overview does not list it (no events today, no ownership record). */
  channelView(channel: string): ChannelView | undefined {
    const fold = this.channels.get(channel);
    const record = this.records.get(channel);
    if (!fold && !record) return undefined;
    const dayStart = startOfUtcDay(this.now()).getTime();
    let waiting = false;
    for (const p of this.pending.values()) if (p.channel === channel) waiting = true;
    const state: ChannelState = waiting ? "waiting for approval" : fold?.activeRunId ? "running" : fold?.queued.size ? "queued" : "idle";
    let runsToday = 0;
    let errorsToday = 0;
    for (const id of this.runsOf.get(channel) ?? []) {
      const r = this.runs.get(id);
      if (!r || Date.parse(r.startedAt) < dayStart) continue;
      runsToday++;
      if (r.stopReason === "error") errorsToday++;
    }
    let costToday = 0;
    for (const u of this.usageOf.get(channel) ?? []) if (Date.parse(u.ts) >= dayStart) costToday += u.cost;
    return {
      channel,
      state,
      ...(record && { owner: record.owner }),
      ...(fold?.activeRunId && { activeRunId: fold.activeRunId }),
      queued: fold?.queued.size ?? 0,
      runsToday,
      errorsToday,
      costToday,
      ...(fold?.lastActivity && { lastActivity: fold.lastActivity }),
    };
  }

  /** The whole overview but its channel rows (see channelView): the page's small sections. */
  summary(): Summary {
    const dayStart = startOfUtcDay(this.now());
    const today = (iso: string) => Date.parse(iso) >= dayStart.getTime();
    const runsToday = [...this.runs.values()].filter((r) => today(r.startedAt));
    const usageToday = this.usage.filter((u) => today(u.ts));
    const runners: RunnerView[] = [...this.runners.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([id, r]) => ({
        id,
        startedAt: r.hb.startedAt,
        leaving: r.hb.leaving === true,
        seenAt: r.seenAt,
        owns: [...this.records.entries()].filter(([, rec]) => rec.owner === id).map(([c]) => c).sort(),
      }));
    return {
      runners,
      channelCount: this.channelNames().length,
      runsToday: runsToday.length,
      errorsToday: runsToday.filter((r) => r.stopReason === "error").length,
      costToday: usageToday.reduce((a, u) => a + u.cost, 0),
      pending: [...this.pending.values()].sort((a, b) => a.askedAt.localeCompare(b.askedAt)),
      // The map holds runs in the order they started.
      recentRuns: [...this.runs.values()].slice(-20).reverse(),
      day: dayStart.toISOString().slice(0, 10),
    };
  }

  snapshot(): Overview {
    return { ...this.summary(), channels: this.channelNames().map((c) => this.channelView(c)!) };
  }
}
