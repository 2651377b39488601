import type { ChannelMessage, ChannelRef } from "@mom/contracts";
import { ADAPTER_NAME_PATTERN, qualifiedChannelId, unescapeChannelToken } from "@mom/contracts";
import { type FSWatcher, watch } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import { type Clock, systemClock } from "./clock.js";
import {
  type EventFileContext,
  type EventFileProblem,
  formatDuration,
  LATE_AFTER_MS,
  MAX_EVENT_FILE_BYTES,
  nextFireTime,
  parseEventFile,
  printableFileName,
  type ScheduledEvent,
} from "@mom/events";
import { firingMessage, type Report, reportMessage } from "./event-message.js";
import { type FileContent, type FileStamp, EventsDir } from "./events-dir.js";
import { ChannelRateLimit } from "./rate-limit.js";
import PQueue from "p-queue";

/** config.json `scheduler` (see docs/scheduler.md). */
export interface SchedulerSettings {
  /** A one-shot at most this late still fires (marked late); an older one goes to events/missed/. */
  graceMinutes: number;
  /** Event files one channel may have at once; more are moved to events/invalid/. */
  maxQueuedPerChannel: number;
  /** Messages (firings and reports) one channel gets in any 60 s; more wait (periodic ticks are skipped). */
  maxPerMinutePerChannel: number;
  /** "events": file notifications plus a rescan every pollIntervalMs; "poll": the rescan only. */
  watch: "events" | "poll";
  pollIntervalMs: number;
}

export interface PublishOutcome {
  duplicate: boolean;
  /** The stream sequence JetStream stored it at (or, for a duplicate, says the first copy is at), when known. */
  seq?: number;
}

export interface EventSchedulerOptions {
  /** The operator's events/: its files may target any channel. */
  eventsDir: string;
  /**
   * workspace/channels: each channel's `<adapter>/<escaped id>/events/` is read too, and a file
   * there may target only that channel. Unset: the operator's events/ only.
   */
  channelsDir?: string;
  settings: SchedulerSettings;
  context: EventFileContext;
  /** Publishes on the channel's inbound subject with Nats-Msg-Id = message id. */
  publish(ref: ChannelRef, message: ChannelMessage): Promise<PublishOutcome>;
  log: Logger;
  clock?: Clock;
  /** A file that does not parse is judged only after it stayed the same this long (default 1000 ms). */
  settleMs?: number;
  /** Pause before publishing again after NATS refused (default 5000 ms). */
  retryMs?: number;
}

/** One events directory: the operator's, or a channel's own. */
interface Source {
  /** Workspace-relative: "events", or "channels/<adapter>/<escaped id>/events". */
  key: string;
  dir: EventsDir;
  /** The channel whose directory it is; undefined for the operator's events/. */
  owner?: ChannelRef;
  /** Set while its directory holds more entries than a scan reads (told once per such spell). */
  overfull?: boolean;
}

/** One file in an events directory as last read. */
interface Entry {
  /** `<source key>/<name>`: what entries are keyed by. */
  key: string;
  source: Source;
  name: string;
  stamp: FileStamp;
  hash: string;
  /** Real time it was read (for the racy-mtime check). */
  readAt: number;
  event?: ScheduledEvent;
  channel?: string;
  /** The file does not parse (yet): judged when it has settled. */
  problem?: EventFileProblem;
  settleTimer?: NodeJS.Timeout;
  /** The fire time of the next firing (its msg-id); undefined once fired and waiting for removal. */
  fireTime?: number;
  /** When to try to publish it: the fire time, or later after a rate limit or a failed publish. */
  dueAt?: number;
  deferredLogged?: boolean;
  /** Periodic ticks skipped for the rate limit since the last log line about it, and when that was. */
  skipped?: number;
  skipLoggedAt?: number;
}

export interface ScheduledSummary {
  /** The file's name; for a channel's own events, its path in the workspace (channels/…/events/<name>). */
  file: string;
  type: ScheduledEvent["type"];
  channel: string;
  next?: string;
}

// A file read within this long of its modification may have changed again within the same mtime
// tick (1 s or 2 s granularity on some file systems), so it is read again on the next scan.
const RACY_MS = 2500;
/**
 * A scan reads at most this many entries of a channel's events directory per event it may queue
 * (scheduler.maxQueuedPerChannel): a command can fill it with millions of files. Those past the
 * cap wait for later scans, as files in front of them fire or are moved to invalid/.
 */
const SCANNED_PER_QUEUED = 10;

/**
 * Watches `workspace/events/` and publishes each event when it is due. All state changes run one at
 * a time on an internal queue; timers only enqueue work. See docs/scheduler.md for the guarantees.
 */
export class EventScheduler {
  private readonly dir: EventsDir;
  private readonly operator: Source;
  /** Channels' own events directories found so far, by key. */
  private readonly channelSources = new Map<string, Source>();
  private readonly channelWatchers = new Map<string, FSWatcher>();
  private readonly clock: Clock;
  private readonly limit: ChannelRateLimit;
  private readonly entries = new Map<string, Entry>();
  private readonly reports = new Map<string, { ref: ChannelRef; reports: Report[]; notBefore: number }>();
  private readonly settleMs: number;
  private readonly retryMs: number;
  private readonly log: Logger;
  /** The work queue: one task at a time, in order; a failed one is logged and the next runs. */
  private readonly queue = new PQueue({ concurrency: 1 });
  private scanQueued = false;
  private stopped = false;
  private pollTimer?: NodeJS.Timeout;
  private watcher?: FSWatcher;
  private cancelWake?: () => void;
  private wakeAt?: number;

  constructor(private readonly o: EventSchedulerOptions) {
    this.dir = new EventsDir(o.eventsDir);
    this.operator = { key: "events", dir: this.dir };
    this.clock = o.clock ?? systemClock;
    this.limit = new ChannelRateLimit(o.settings.maxPerMinutePerChannel);
    this.settleMs = o.settleMs ?? 1000;
    this.retryMs = o.retryMs ?? 5000;
    this.log = o.log;
  }

  get eventsDir(): string {
    return this.dir.dir;
  }

  async start(): Promise<void> {
    await this.dir.ensure();
    await this.enqueue(() => this.scan());
    const { watch: mode, pollIntervalMs } = this.o.settings;
    if (mode === "events") this.startWatcher();
    this.pollTimer = setInterval(() => this.requestScan(), pollIntervalMs);
    this.pollTimer.unref();
    this.log.info({ eventsDir: this.dir.dir, watch: this.watcher ? "events" : "poll", pollIntervalMs, events: this.scheduled().length }, "scheduler ready");
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    this.watcher?.close();
    for (const w of this.channelWatchers.values()) w.close();
    this.channelWatchers.clear();
    this.cancelWake?.();
    for (const e of this.entries.values()) clearTimeout(e.settleTimer);
    await this.idle();
  }

  /** Resolves when no work is queued (tests: after writing a file and calling `rescan()`). */
  async idle(): Promise<void> {
    await this.queue.onIdle();
  }

  /** Reads the directory now instead of at the next notification or poll. */
  rescan(): Promise<void> {
    return this.enqueue(() => this.scan());
  }

  /** What is scheduled, soonest first. */
  scheduled(): ScheduledSummary[] {
    return [...this.entries.values()]
      .filter((e) => e.event)
      .sort((a, b) => (a.fireTime ?? Infinity) - (b.fireTime ?? Infinity) || a.key.localeCompare(b.key))
      .map((e) => ({
        file: shownName(e),
        type: e.event!.type,
        channel: e.channel!,
        ...(e.fireTime !== undefined && { next: new Date(e.fireTime).toISOString() }),
      }));
  }

  // ------------------------------------------------------------------ the work queue

  private enqueue(fn: () => Promise<void> | void): Promise<void> {
    // Never rejects; the next wake-up is armed before the next task starts.
    return this.queue.add(async () => {
      try {
        if (!this.stopped) await fn();
      } catch (err) {
        this.log.error({ err }, "scheduler task failed");
      } finally {
        this.arm();
      }
    });
  }

  private requestScan(): void {
    if (this.scanQueued || this.stopped) return;
    this.scanQueued = true;
    void this.enqueue(async () => {
      this.scanQueued = false;
      await this.scan();
    });
  }

  private startWatcher(): void {
    try {
      this.watcher = watch(this.dir.dir, { persistent: false }, () => this.requestScan());
      // The channels' directories found by the first scan (later ones are watched when found).
      for (const source of this.channelSources.values()) this.watchChannel(source);
      this.watcher.on("error", (err) => {
        this.log.warn({ err, eventsDir: this.dir.dir }, "file notifications failed; polling only");
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch (err) {
      this.log.warn({ err, eventsDir: this.dir.dir }, "file notifications unavailable; polling only");
      this.watcher = undefined;
    }
  }

  /** One timer, for the earliest thing due (a firing, a deferred firing, a report). */
  private arm(): void {
    if (this.stopped) return;
    let next: number | undefined;
    for (const e of this.entries.values()) if (e.event && e.dueAt !== undefined && (next === undefined || e.dueAt < next)) next = e.dueAt;
    for (const r of this.reports.values()) if (next === undefined || r.notBefore < next) next = r.notBefore;
    if (next === this.wakeAt) return;
    this.cancelWake?.();
    this.cancelWake = undefined;
    this.wakeAt = next;
    if (next === undefined) return;
    this.cancelWake = this.clock.at(next, () => {
      this.wakeAt = undefined;
      this.cancelWake = undefined;
      void this.enqueue(() => this.runDue());
    });
  }

  // ------------------------------------------------------------------ watching

  private async scan(): Promise<void> {
    const listed = new Map<string, { source: Source; name: string; stamp: FileStamp }>();
    // Sources that could not be read this time: what they had stays scheduled.
    const unreadable = new Set<string>();
    try {
      for (const [name, stamp] of (await this.dir.list()).files) listed.set(`${this.operator.key}/${name}`, { source: this.operator, name, stamp });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        await this.dir.ensure();
      } else {
        // A shared volume that hiccups (ESTALE, EIO) must not cancel every event: keep the state.
        this.log.warn({ err, eventsDir: this.dir.dir }, "cannot read the events directory; keeping what is scheduled");
        return;
      }
    }
    // Sources listed in part (a channel's directory past the cap): what they had is checked file by file.
    const partial = new Set<Source>();
    const maxEntries = this.o.settings.maxQueuedPerChannel * SCANNED_PER_QUEUED;
    for (const source of await this.findChannelSources()) {
      try {
        const { files, complete } = await source.dir.list(maxEntries);
        for (const [name, stamp] of files) listed.set(`${source.key}/${name}`, { source, name, stamp });
        if (!complete) partial.add(source);
        if (!complete && !source.overfull) this.log.warn({ dir: source.key, channel: qualifiedChannelId(source.owner!), maxEntries }, `a channel's events directory holds more than ${maxEntries} entries: each scan reads its first ${maxEntries} only (${SCANNED_PER_QUEUED} × scheduler.maxQueuedPerChannel); the files past them wait until those fire or are moved aside`);
        source.overfull = !complete;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === "ENOENT" || code === "ENOTDIR" || code === "ELOOP") {
          // Gone, or no longer a directory (a symlink is never followed): none of its files count.
          if (code !== "ENOENT") this.log.warn({ dir: source.key, channel: qualifiedChannelId(source.owner!) }, "a channel's events directory is not a directory (a symlink?); ignored");
          this.dropChannelSource(source.key);
        } else {
          this.log.warn({ err, dir: source.key }, "cannot read a channel's events directory; keeping what is scheduled from it");
          unreadable.add(source.key);
        }
      }
    }
    for (const [key, e] of [...this.entries]) {
      if (listed.has(key) || unreadable.has(e.source.key)) continue;
      if (partial.has(e.source) && (await e.source.dir.read(e.name))) continue;
      this.forget(key, "deleted");
    }
    // Oldest first, so that every replica fills a channel's queue in the same order.
    const files = [...listed].sort(([a, x], [b, y]) => x.stamp.mtimeMs - y.stamp.mtimeMs || a.localeCompare(b));
    const realNow = Date.now();
    for (const [key, { source, name, stamp }] of files) {
      const e = this.entries.get(key);
      const unchanged = e && e.stamp.mtimeMs === stamp.mtimeMs && e.stamp.size === stamp.size && e.stamp.ino === stamp.ino;
      // Same stamp: skip, unless it was read so soon after its modification that a second write in
      // the same mtime tick could hide behind it (then read again, at most every 500 ms).
      if (unchanged && (e.readAt - stamp.mtimeMs > RACY_MS || realNow - e.readAt < 500)) continue;
      await this.consider(source, name, await source.dir.read(name));
    }
  }

  /**
   * Every channel's own events directory (`channels/<adapter>/<escaped id>/events`), found by
   * listing the channels each scan; one that is not a real directory (a symlink) is skipped. New
   * ones are watched when file notifications are on.
   */
  private async findChannelSources(): Promise<Source[]> {
    const root = this.o.channelsDir;
    if (!root) return [];
    const found: Source[] = [];
    for (const adapter of await subdirs(root)) {
      if (!ADAPTER_NAME_PATTERN.test(adapter)) continue;
      for (const token of await subdirs(join(root, adapter))) {
        let channelId: string;
        try {
          channelId = unescapeChannelToken(token);
        } catch {
          continue; // not a directory mom made
        }
        const dir = join(root, adapter, token, "events");
        try {
          if (!(await lstat(dir)).isDirectory()) continue;
        } catch {
          continue;
        }
        const key = `channels/${adapter}/${token}/events`;
        let source = this.channelSources.get(key);
        if (!source) {
          source = { key, dir: new EventsDir(dir, true), owner: { adapter, channelId } };
          this.channelSources.set(key, source);
          this.watchChannel(source);
        }
        found.push(source);
      }
    }
    const live = new Set(found.map((f) => f.key));
    for (const key of [...this.channelSources.keys()]) if (!live.has(key)) this.dropChannelSource(key);
    return found;
  }

  private dropChannelSource(key: string): void {
    this.channelSources.delete(key);
    this.channelWatchers.get(key)?.close();
    this.channelWatchers.delete(key);
  }

  private watchChannel(source: Source): void {
    if (this.o.settings.watch !== "events" || !this.watcher || this.stopped || this.channelWatchers.has(source.key)) return;
    try {
      const w = watch(source.dir.dir, { persistent: false }, () => this.requestScan());
      // Polling still finds what a lost watch would have told.
      w.on("error", () => {
        w.close();
        if (this.channelWatchers.get(source.key) === w) this.channelWatchers.delete(source.key);
      });
      this.channelWatchers.set(source.key, w);
    } catch {
      // e.g. out of inotify watches: polling covers it
    }
  }

  private async consider(source: Source, name: string, content: FileContent | undefined): Promise<void> {
    const key = `${source.key}/${name}`;
    if (!content) return this.forget(key, "deleted");
    const old = this.entries.get(key);
    if (old && old.hash === content.hash) {
      old.stamp = content.stamp;
      old.readAt = Date.now();
      return;
    }
    if (old) clearTimeout(old.settleTimer);
    const entry: Entry = { key, source, name, stamp: content.stamp, hash: content.hash, readAt: Date.now() };
    const parsed =
      content.text === undefined
        ? { ok: false as const, reason: `too large: ${content.stamp.size} bytes (an event file has at most ${MAX_EVENT_FILE_BYTES} bytes)`, ...(source.owner && { ref: source.owner }) }
        : parseEventFile(name, content.text, this.o.context, source.owner);
    if (!parsed.ok) {
      // Maybe a write in progress: judge it only once it has stayed the same for settleMs.
      entry.problem = { reason: parsed.reason, ...(parsed.ref && { ref: parsed.ref }) };
      entry.settleTimer = setTimeout(() => void this.enqueue(() => this.settle(key, content.hash)), this.settleMs);
      entry.settleTimer.unref();
      this.entries.set(key, entry);
      if (old?.event) this.log.info({ file: shownName(entry), channel: old.channel }, "event file changed and does not parse; its schedule is suspended");
      return;
    }
    await this.accept(entry, parsed.event, old?.event !== undefined);
  }

  private async settle(key: string, hash: string): Promise<void> {
    const e = this.entries.get(key);
    if (!e || e.hash !== hash || !e.problem) return;
    const content = await e.source.dir.read(e.name);
    if (!content || content.hash !== hash) return this.consider(e.source, e.name, content);
    await this.reject(e, e.problem);
  }

  private forget(key: string, why: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    clearTimeout(e.settleTimer);
    this.entries.delete(key);
    if (e.event && e.fireTime !== undefined) this.log.info({ file: shownName(e), channel: e.channel }, `event cancelled (file ${why})`);
  }

  // ------------------------------------------------------------------ deciding

  private async accept(entry: Entry, event: ScheduledEvent, rescheduled: boolean): Promise<void> {
    const now = this.clock.now();
    const channel = qualifiedChannelId(event.ref);
    const { graceMinutes, maxQueuedPerChannel } = this.o.settings;
    if (event.type === "one-shot" && event.atMs < now - graceMinutes * 60_000) {
      return this.missed(entry, event, now);
    }
    const queued = [...this.entries.values()].filter((x) => x.key !== entry.key && x.event && x.channel === channel).length;
    if (queued >= maxQueuedPerChannel) {
      return this.reject(entry, {
        reason: `too many scheduled events for ${channel}: it already has ${queued} (limit ${maxQueuedPerChannel}, scheduler.maxQueuedPerChannel)`,
        ref: event.ref,
      });
    }
    const fireTime = nextFireTime(event, now, entry.stamp.mtimeMs);
    // Only a periodic event can have no next firing.
    if (fireTime === undefined) return this.reject(entry, { reason: `bad cron "${event.type === "periodic" ? event.schedule : ""}": it never fires again`, ref: event.ref });
    Object.assign(entry, { event, channel, fireTime, dueAt: event.type === "immediate" ? now : fireTime });
    this.entries.set(entry.key, entry);
    this.log.info({ file: shownName(entry), channel, type: event.type, next: new Date(fireTime).toISOString() }, rescheduled ? "event rescheduled" : "event scheduled");
  }

  private async reject(entry: Entry, problem: EventFileProblem): Promise<void> {
    this.entries.delete(entry.key);
    const now = this.clock.now();
    const note = `${problem.reason}\n\nThe scheduler moved this file here from events/${entry.name} at ${new Date(now).toISOString()}; it will not fire.\nWrite a corrected file into events/ to schedule it.\n`;
    const channel = problem.ref ? qualifiedChannelId(problem.ref) : undefined;
    const moved = await this.moveAside(entry, "invalid", note, problem.reason);
    if (!moved) {
      this.log.debug({ file: shownName(entry), channel }, "invalid event file was moved or changed by someone else");
      return;
    }
    // Relative to the directory the events/ is in: the workspace, or the channel's own directory
    // (the agent's working directory).
    const movedTo = `events/invalid/${moved}`;
    this.log.warn({ file: shownName(entry), dir: entry.source.key, channel, reason: problem.reason, movedTo }, `invalid event file: ${problem.reason}`);
    if (problem.ref) this.queueReport(problem.ref, { kind: "invalid", file: printableFileName(entry.name), movedTo, reason: problem.reason, ...(entry.source.owner && { dir: entry.source.key }) }, now);
  }

  private async missed(entry: Entry, event: Extract<ScheduledEvent, { type: "one-shot" }>, now: number): Promise<void> {
    this.entries.delete(entry.key);
    const { graceMinutes } = this.o.settings;
    const reason = `it was due at ${event.at}, ${formatDuration(now - event.atMs)} before the scheduler saw it, which is more than the grace period of ${graceMinutes} minutes (scheduler.graceMinutes)`;
    const note = `missed: ${reason}\n\nThe scheduler moved this file here from events/${entry.name} at ${new Date(now).toISOString()}; it did not fire.\n`;
    const moved = await this.moveAside(entry, "missed", note, reason);
    if (!moved) return;
    const movedTo = `events/missed/${moved}`;
    const channel = qualifiedChannelId(event.ref);
    this.log.warn({ file: shownName(entry), channel, at: event.at, movedTo }, `missed one-shot event: ${reason}`);
    this.queueReport(event.ref, { kind: "missed", file: entry.name, movedTo, reason, at: event.at, text: event.text, ...(entry.source.owner && { dir: entry.source.key }) }, now);
  }

  /**
   * Moves the file aside; undefined when another replica (or its author) got there first. When the
   * file system refuses, the file stays where it is, remembered as bad until it changes, and the
   * error is logged once.
   */
  private async moveAside(entry: Entry, kind: "invalid" | "missed", note: string, reason: string): Promise<string | undefined> {
    try {
      return await entry.source.dir.moveAside(entry.name, kind, note, entry.hash);
    } catch (err) {
      this.log.error({ err, file: shownName(entry), reason }, `cannot move the event file to events/${kind}/; it stays and is ignored until it changes`);
      const { key, source, name, stamp, hash, readAt } = entry;
      this.entries.set(key, { key, source, name, stamp, hash, readAt, problem: { reason } });
      return undefined;
    }
  }

  private queueReport(ref: ChannelRef, report: Report, now: number): void {
    const channel = qualifiedChannelId(ref);
    const pending = this.reports.get(channel) ?? { ref, reports: [], notBefore: now };
    pending.reports.push(report);
    this.reports.set(channel, pending);
  }

  // ------------------------------------------------------------------ firing

  private async runDue(): Promise<void> {
    const now = this.clock.now();
    for (const [channel, pending] of [...this.reports]) {
      if (pending.notBefore > now) continue;
      const slot = this.limit.nextSlot(channel, now);
      if (slot > now) {
        pending.notBefore = slot;
        continue;
      }
      const message = reportMessage(pending.ref, pending.reports, now);
      try {
        await this.o.publish(pending.ref, message);
        this.limit.record(channel, now);
        this.reports.delete(channel);
        this.log.info({ channel, msgId: message.id, files: pending.reports.map((r) => r.file) }, "reported in the channel");
      } catch (err) {
        pending.notBefore = now + this.retryMs;
        this.log.error({ err, channel }, "could not report in the channel; will retry");
      }
    }
    const due = [...this.entries.values()]
      .filter((e) => e.event && e.dueAt !== undefined && e.dueAt <= now)
      .sort((a, b) => a.dueAt! - b.dueAt! || a.key.localeCompare(b.key));
    for (const e of due) {
      if (this.entries.get(e.key) !== e) continue;
      const event = e.event!;
      if (event.type === "periodic" && now - e.fireTime! > LATE_AFTER_MS) {
        // The process was stalled or suspended past a tick: no replay, carry on from now.
        this.log.warn({ file: shownName(e), channel: e.channel, tick: new Date(e.fireTime!).toISOString() }, `tick skipped: ${formatDuration(now - e.fireTime!)} overdue (periodic events do not replay missed ticks)`);
        this.nextTick(e, event, now);
        continue;
      }
      const slot = this.limit.nextSlot(e.channel!, now);
      if (slot > now) {
        const { maxPerMinutePerChannel } = this.o.settings;
        if (event.type === "periodic") {
          // At most one line a minute per file, however often it ticks.
          e.skipped = (e.skipped ?? 0) + 1;
          if (e.skipLoggedAt === undefined || now - e.skipLoggedAt >= 60_000) {
            this.log.warn(
              { file: shownName(e), channel: e.channel, tick: new Date(e.fireTime!).toISOString(), skipped: e.skipped },
              `tick skipped: ${e.channel} reached ${maxPerMinutePerChannel} messages per minute (scheduler.maxPerMinutePerChannel)`,
            );
            e.skipLoggedAt = now;
            e.skipped = 0;
          }
          this.nextTick(e, event, now);
        } else {
          e.dueAt = slot;
          if (!e.deferredLogged) this.log.warn({ file: shownName(e), channel: e.channel, until: new Date(slot).toISOString() }, `event deferred: ${e.channel} reached ${maxPerMinutePerChannel} messages per minute (scheduler.maxPerMinutePerChannel)`);
          e.deferredLogged = true;
        }
        continue;
      }
      await this.fire(e, event);
    }
  }

  private async fire(e: Entry, event: ScheduledEvent): Promise<void> {
    const now = this.clock.now();
    const lateMs = event.type === "one-shot" ? now - event.atMs : 0;
    const lateMinutes = lateMs >= LATE_AFTER_MS ? Math.floor(lateMs / 60_000) : undefined;
    const message = firingMessage({ event, fireTimeMs: e.fireTime!, firedAtMs: now, ...(lateMinutes && { lateMinutes }), ...(e.source.owner && { dir: e.source.key }) });
    let outcome: PublishOutcome;
    try {
      outcome = await this.o.publish(event.ref, message);
    } catch (err) {
      this.log.error({ err, file: shownName(e), channel: e.channel, msgId: message.id }, "could not publish the event; will retry");
      // The same firing later, same msg-id: a periodic tick too, even when its next ticks fall
      // due meanwhile. A NATS outage (a stream leader's election: "no responders" for seconds)
      // fails every replica's publish alike, so a tick given up here is lost, not left to another
      // replica. The ticks that fell due follow it in order (below); only a tick more than
      // LATE_AFTER_MS overdue is skipped, with a log line (runDue).
      // From the failure, not from `now`: a publish can wait out its whole timeout (a frozen node),
      // and a retry counted from before it would come at once.
      e.dueAt = this.clock.now() + this.retryMs;
      return;
    }
    this.limit.record(e.channel!, now);
    this.log.info(
      { file: shownName(e), channel: e.channel, msgId: message.id, type: event.type, duplicate: outcome.duplicate, ...(outcome.seq !== undefined && { seq: outcome.seq }), ...(lateMinutes && { lateMinutes }) },
      outcome.duplicate ? "event fired (already published by another replica)" : "event fired",
    );
    // The tick after this one, not the first after now: ticks that fell due while this one was
    // published (a publish may wait out its whole timeout, and one task runs at a time) or
    // retried fire next, each in turn, instead of being skipped unseen. Tick n+1 leaves a
    // replica only once tick n is on the stream, which keeps an event's ticks in order there
    // whichever replica's copy lands first (test/chaos/scheduler-chaos.test.ts).
    if (event.type === "periodic") return this.nextTick(e, event, e.fireTime!);
    // Fired: remove the file, unless it was written again meanwhile (then it is a new event).
    e.fireTime = e.dueAt = undefined;
    try {
      await e.source.dir.removeIfUnchanged(e.name, e.hash);
      this.entries.delete(e.key);
    } catch (err) {
      // Keep the entry (same content = not fired again) and say why the file stays.
      this.log.error({ err, file: shownName(e) }, "event fired but its file could not be deleted");
    }
  }

  /**
   * The first tick after `after`: after a firing, its own tick (ticks that fell due meanwhile follow
   * in turn); after a skip (overdue, over budget), now: missed ticks are not replayed.
   */
  private nextTick(e: Entry, event: Extract<ScheduledEvent, { type: "periodic" }>, after: number): void {
    const tick = event.cron.nextAfter(new Date(after));
    e.deferredLogged = false;
    if (!tick) {
      e.fireTime = e.dueAt = undefined;
      this.log.warn({ file: shownName(e), channel: e.channel }, "periodic event has no further ticks");
      return;
    }
    e.fireTime = e.dueAt = tick.getTime();
  }
}

/** How logs and `scheduled()` name a file: its name in the operator's events/, its workspace path in a channel's. */
function shownName(e: Entry): string {
  return e.source.owner ? `${e.source.key}/${e.name}` : e.name;
}

async function subdirs(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { withFileTypes: true }))
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
  } catch {
    return [];
  }
}
