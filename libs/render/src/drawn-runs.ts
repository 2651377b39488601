import { type Bus, isPermissionDenied, type KV, kvKey, namespacedName } from "@mom/bus";
import pTimeout from "p-timeout";
import type { Logger } from "pino";

/**
 * What a process needs to go on drawing a run that another process of the same adapter began
 * (one killed with kill -9, or stopped mid-run), or not to draw its answer a second time. Kept on
 * the bus, per adapter and run, in the `<NS>_DRAWN` key-value bucket (docs/scaling.md).
 */
export interface DrawnRun {
  /** The layout's resume form of the run (`Layout.resumeForm`: its progress message's id), once that message is on the platform. */
  progress?: unknown;
  /** The run's answer (or a post, or a busy refusal) is on the platform: the ids of the messages carrying it. */
  answered?: string[];
  /** The messages of its answer sent so far, when it takes several (the last one is `answered`). */
  answering?: string[];
  /** The run's approval prompts on the platform: where each is (what `Layout.prompt` gave), by approval id. */
  prompts?: Record<string, unknown>;
  /** The run's "queued" notice is on the platform: the layout's form of it (`Layout.queued`). */
  queued?: unknown;
}

/**
 * Where the Presenter (and the shell's EventDrawing) keep each run's DrawnRun. Neither call ever
 * rejects, and neither holds drawing up for long: the bucket is not needed to answer, only to
 * continue another process's run.
 */
export interface DrawnRuns {
  /** The run's record; undefined when there is none, or when it could not be read in time (logged): drawing then goes on as if none. */
  read(runId: string): Promise<DrawnRun | undefined>;
  /**
   * Records the run's state, replacing what was there. Resolves once it landed, or after a short
   * wait while it goes on in the background; a write that fails is logged and tried again for a
   * while. Writes of one run land in the order they were made (a newer one replaces one not yet
   * landed).
   */
  write(runId: string, record: DrawnRun): Promise<void>;
}

/** Records older than this are removed by the server: a successor meets a run within seconds of its predecessor's death. */
export const DRAWN_TTL_MS = 24 * 3600_000;
/** The bucket's name suffix: `MOM_DRAWN` (stream `KV_MOM_DRAWN`) in the default namespace. */
export const DRAWN_BUCKET = "DRAWN";

/** The key of a run of an adapter: `<adapter>.<runId>`, so a NATS user can be allowed its adapter's keys only (`$KV.MOM_DRAWN.<adapter>.>`). */
export function drawnKey(adapter: string, runId: string): string {
  return `${adapter}.${kvKey(runId)}`;
}

/** A record read from the bus, checked: what does not look like one is no record. */
function asDrawnRun(value: unknown): DrawnRun | undefined {
  if (!value || typeof value !== "object" || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  const ids = (x: unknown) => (Array.isArray(x) && x.every((id) => typeof id === "string") ? (x as string[]) : undefined);
  const answered = ids(v.answered);
  const answering = ids(v.answering);
  const prompts = v.prompts && typeof v.prompts === "object" && !Array.isArray(v.prompts) ? (v.prompts as Record<string, unknown>) : undefined;
  return { ...(v.progress !== undefined && { progress: v.progress }), ...(answered && { answered }), ...(answering && { answering }), ...(prompts && { prompts }), ...(v.queued !== undefined && { queued: v.queued }) };
}

const TIMED_OUT = Symbol("timed out");

export interface BusDrawnRunsOptions {
  /** How long a read may wait (the bucket being opened included) before drawing goes on without it; default 2 s. */
  readWaitMs?: number;
  /** How long drawing waits for a write to land before going on (the write goes on in the background); default 500 ms. */
  writeWaitMs?: number;
  /** Opening the bucket again after a failure: not before this long; default 5 s. */
  reopenAfterMs?: number;
  /** How long a write that fails is tried again (backoff 250 ms → 2 s) before it is given up; default 30 s. */
  retryForMs?: number;
}

/** One run's record on its way to the bucket: the newest wanted, and who waits for which version. */
interface KeyWriter {
  runId: string;
  want: DrawnRun;
  version: number;
  waiters: Array<{ version: number; done: () => void }>;
}

/**
 * The adapter's records in the `<NS>_DRAWN` bucket, created when missing (TTL a day, replicas as
 * the streams: `nats.streams.replicas`). The bucket is opened in the background: a NATS user
 * without its grants (an auth.conf of before it) or a bucket that cannot be had is logged once,
 * and the ingress draws as it did without it.
 */
export function busDrawnRuns(bus: Pick<Bus, "keyValue" | "subjects">, adapter: string, log: Logger, o: BusDrawnRunsOptions = {}): DrawnRuns {
  return new KvDrawnRuns(bus, adapter, log, o);
}

class KvDrawnRuns implements DrawnRuns {
  private readonly bucket: string;
  private kv?: Promise<KV | undefined>;
  private failedAt = 0;
  private refused = false;
  /** Runs whose record is being written: one writer per key, so a late write never overtakes a newer one. */
  private readonly writing = new Map<string, KeyWriter>();
  private readonly readWaitMs: number;
  private readonly writeWaitMs: number;
  private readonly reopenAfterMs: number;
  private readonly retryForMs: number;

  constructor(
    private readonly bus: Pick<Bus, "keyValue" | "subjects">,
    private readonly adapter: string,
    private readonly log: Logger,
    o: BusDrawnRunsOptions,
  ) {
    this.bucket = namespacedName(bus as Bus, DRAWN_BUCKET);
    this.readWaitMs = o.readWaitMs ?? 2000;
    this.writeWaitMs = o.writeWaitMs ?? 500;
    this.reopenAfterMs = o.reopenAfterMs ?? 5000;
    this.retryForMs = o.retryForMs ?? 30_000;
    void this.open();
  }

  /** The bucket, opened (created when missing) once; after a failure opened again on a later use, unless the user may not. */
  private open(): Promise<KV | undefined> {
    if (this.kv) return this.kv;
    if (this.refused || Date.now() - this.failedAt < this.reopenAfterMs) return Promise.resolve(undefined);
    const opening = this.bus.keyValue(this.bucket, { ttlMs: DRAWN_TTL_MS }).catch((err: unknown) => {
      this.failedAt = Date.now();
      if (this.kv === opening) this.kv = undefined;
      if (isPermissionDenied(err)) {
        this.refused = true;
        this.log.warn({ err, bucket: this.bucket }, `this NATS user may not use the ${this.bucket} bucket (give it the grants of docs/ingress-sdk.md): runs cut off by a crash of this ingress will be answered in a new message`);
      } else this.log.warn({ err, bucket: this.bucket }, `could not open the ${this.bucket} bucket (runs cut off by a crash of this ingress will be answered in a new message); trying again later`);
      return undefined;
    });
    this.kv = opening;
    return opening;
  }

  async read(runId: string): Promise<DrawnRun | undefined> {
    const key = drawnKey(this.adapter, runId);
    const reading = (async () => {
      const kv = await this.open();
      if (!kv) return undefined;
      const e = await kv.get(key);
      if (!e || e.operation !== "PUT" || e.length === 0) return undefined;
      return asDrawnRun(e.json<unknown>());
    })();
    try {
      const got = await pTimeout<DrawnRun | undefined | typeof TIMED_OUT>(reading, { milliseconds: this.readWaitMs, fallback: () => TIMED_OUT });
      if (got === TIMED_OUT) {
        reading.catch(() => {});
        this.log.warn({ runId, bucket: this.bucket }, `reading what an earlier process drew of run ${runId} took over ${this.readWaitMs} ms: drawing it as if nothing was`);
        return undefined;
      }
      return got;
    } catch (err) {
      this.log.warn({ err, runId, bucket: this.bucket }, `could not read what an earlier process drew of run ${runId}: drawing it as if nothing was`);
      return undefined;
    }
  }

  async write(runId: string, record: DrawnRun): Promise<void> {
    const key = drawnKey(this.adapter, runId);
    let w = this.writing.get(key);
    const fresh = !w;
    w ??= { runId, want: record, version: 0, waiters: [] };
    w.want = record;
    const version = ++w.version;
    const landed = new Promise<void>((done) => w.waiters.push({ version, done }));
    if (fresh) {
      this.writing.set(key, w);
      void this.writeOut(key, w);
    }
    await pTimeout(landed, { milliseconds: this.writeWaitMs, fallback: () => undefined });
  }

  /**
   * Puts the newest record of a run until one lands: a put that fails (a leader election, an
   * outage) is tried again, with the newest record, for `retryForMs`; the first failure and the
   * giving up are logged.
   */
  private async writeOut(key: string, w: KeyWriter): Promise<void> {
    const began = Date.now();
    let failures = 0;
    let landed = 0;
    const settle = (upTo: number) => {
      for (const x of w.waiters.filter((x) => x.version <= upTo)) x.done();
      w.waiters = w.waiters.filter((x) => x.version > upTo);
    };
    while (landed < w.version) {
      const version = w.version;
      try {
        const kv = await this.open();
        if (!kv) {
          if (this.refused) break; // said once, at open: nothing to retry
          throw new Error(`the ${this.bucket} bucket is not open`);
        }
        await kv.put(key, JSON.stringify(w.want));
        landed = version;
        settle(version);
        if (failures > 0) this.log.info({ runId: w.runId, bucket: this.bucket, failures }, `recorded run ${w.runId}'s platform messages after ${failures} failed tries`);
        failures = 0;
      } catch (err) {
        failures++;
        const closed = /connection closed|draining/i.test((err as Error)?.message ?? "");
        if (closed || Date.now() - began >= this.retryForMs) {
          this.log.warn({ err, runId: w.runId, bucket: this.bucket, failures }, `gave up recording run ${w.runId}'s platform messages: a process after a crash of this one would draw it anew`);
          break;
        }
        if (failures === 1) this.log.warn({ err, runId: w.runId, bucket: this.bucket }, `could not record run ${w.runId}'s platform messages; trying again for up to ${this.retryForMs / 1000} s`);
        await new Promise((r) => setTimeout(r, Math.min(250 * 2 ** (failures - 1), 2000)).unref());
      }
    }
    settle(Number.POSITIVE_INFINITY);
    this.writing.delete(key);
  }
}
