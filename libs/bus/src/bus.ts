import { createSubjects, type Subjects } from "@mom/contracts";
import { type JetStreamAccountStats, JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type JetStreamManager, type JetStreamPublishOptions, jetstream, jetstreamManager, type PubAck, type StreamInfo } from "@nats-io/jetstream";
import { headers, type NatsConnection, nuid, type ServerInfo, type Status, type Subscription, type SubscriptionOptions } from "@nats-io/nats-core";
import pRetry, { AbortError } from "p-retry";
import { metrics } from "@mom/observability";
import { type Logger, pino } from "pino";
import type { TSchema } from "typebox";
import { type ObjectStore, Objm } from "@nats-io/obj";
import { type KV, Kvm } from "@nats-io/kv";
import { validator, type StreamKey } from "@mom/contracts";
import { follow, type FollowOptions, type Following } from "./follow.js";
import { connectNats, splitCredentials } from "./connect.js";
import type { ConsumeOptions, Consumption } from "./consume-types.js";
import { PullConsumption } from "./consumption.js";
import { buildDeadLetter, type DeadLetterInput } from "./dead-letter.js";
import { type FileInfo, type FileSource, filesBucketName, type PutFileMeta, type PutFileResult, provisionFilesBucket, readObject } from "./files.js";
import { type BusOptions, DEFAULT_DRAIN_TIMEOUT_MS } from "./options.js";
import { provisionStreams, STREAM_NAME_IN_USE } from "./provision.js";
import { retryTransient } from "./transient.js";

export interface PublishResult {
  /** Where the message is stored (for a duplicate: where the first copy is); always > 0. */
  seq: number;
  /** True when JetStream dropped it as a duplicate of an earlier publish with the same msg id. */
  duplicate: boolean;
}

export interface StreamSummary {
  maxAgeMs: number;
  /** -1: no size limit. */
  maxBytes: number;
  messages: number;
  bytes: number;
  /** Time of the oldest message kept (ISO), when there is one. */
  firstTs?: string;
}

export interface PublishOptions {
  /**
   * Keep retrying a failed publish (timeout, no responders, connection down) for this long, with the
   * same msg id so JetStream drops any copy that did land. Default 0: one attempt.
   */
  retryForMs?: number;
  /**
   * Per-attempt timeout waiting for the JetStream ack (default 5 s); also how long an attempt keeps
   * asking while the stream leader holds the msg-id in flight with nothing stored (publishStored).
   */
  timeoutMs?: number;
  /** Stops retrying (the publish rejects) once aborted: the publisher no longer has the right to speak. */
  signal?: AbortSignal;
  /**
   * Only this publisher ever sends this msg-id (a run's events, numbered by the run's one owner).
   * When the stream leader goes on holding it as in flight with nothing stored for two attempts
   * (nats-server 2.10 after a leader change lost the proposal: it refuses that msg-id for the
   * duplicate window), the message is sent again under a fresh msg-id (`<msgId>~<nuid>`). A copy
   * may then be stored twice; readers of run events drop a repeated seq.
   */
  freshIdWhenStuck?: boolean;
  /** W3C trace context, sent as the `traceparent` header (docs/observability.md). */
  traceparent?: string;
  /** More headers stored with the message (e.g. who re-published a dead letter); never a secret. */
  headers?: Record<string, string>;
}


/** JetStream API error (nats-server >= 2.11): "duplicate message id is in process". */
const MSG_ID_IN_PROCESS = 10158;
/** nats.js's own per-request timeout for a JetStream publish. */
const DEFAULT_PUBLISH_TIMEOUT_MS = 5000;

/**
 * The stream has taken a publish of this msg-id in and stored nothing under it (yet): not a
 * confirmation that the message is on the stream. See Bus.publishStored.
 */
class MsgIdInFlightError extends Error {
  constructor(subject: string, msgId: string, asked: number, ms: number) {
    super(`the stream leader still holds msg-id ${msgId} on ${subject} as in flight, with nothing stored under it, after ${asked} asks in ${ms} ms (another publish of it not yet committed, or one lost in a leader change)`);
    this.name = "MsgIdInFlightError";
  }
}

function describePublishError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  // nats.js reports "no responders" on a publish as "jetstream is not enabled".
  return message === "jetstream is not enabled" ? "no stream takes this subject, or JetStream is unavailable" : message;
}

/**
 * Debian's own nats-server service listens on 4222 without JetStream: say how to turn it on, in
 * one line, rather than what failed inside the client.
 */
export function noJetStreamMessage(url: string, err: unknown): string {
  const reason = err instanceof Error ? err.message : String(err);
  const off = /jetstream is not enabled|503|no responders/i.test(reason);
  return off
    ? `NATS at ${url} runs without JetStream, which mom needs: start nats-server with -js (Debian's nats-server service: add \`jetstream { store_dir: "/var/lib/nats" }\` to /etc/nats-server.conf, then \`sudo systemctl restart nats-server\`), or point NATS_URL at a server with JetStream`
    : `NATS at ${url} has no usable JetStream: ${reason}`;
}

function shownUrl(url: string): string {
  return splitCredentials(url).shown;
}

/** The NATS handles behind a Bus, for this package's own modules (record streams, range reads); the package does not export it. */
export interface BusConnection {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
}
const connections = new WeakMap<Bus, BusConnection>();
export function connectionOf(bus: Bus): BusConnection {
  return connections.get(bus)!;
}

/** The one place that touches NATS: connection, stream provisioning, publishing, typed consumption. */
export class Bus implements FileSource {
  readonly subjects: Subjects;
  /** The attachments Object Store bucket of this namespace, e.g. `MOM_FILES` (stream `OBJ_MOM_FILES`). */
  readonly filesBucket: string;
  private files?: Promise<ObjectStore>;
  readonly logger: Logger;
  private readonly consumptions = new Set<Consumption & { readonly bound: boolean; readonly name: string }>();
  private drainPromise?: Promise<void>;
  private disconnected = false;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly opts: BusOptions,
    logger: Logger,
  ) {
    this.subjects = createSubjects(opts.namespace ?? "mom");
    this.filesBucket = filesBucketName(this.subjects.namespace);
    this.logger = logger;
    connections.set(this, { nc, js, jsm });
    void this.watchConnection();
  }

  /** Why this bus cannot serve now (disconnected, a consumer not bound), or undefined: what /readyz reports. */
  readinessProblem(): string | undefined {
    if (this.nc.isClosed()) return "NATS connection closed";
    if (this.disconnected) return "NATS disconnected; reconnecting";
    for (const c of this.consumptions) {
      if (!c.bound) return `consumer ${c.name} not bound; retrying`;
    }
    return undefined;
  }

  private async watchConnection(): Promise<void> {
    try {
      for await (const s of this.nc.status()) {
        if (s.type === "disconnect") this.disconnected = true;
        else if (s.type === "reconnect") this.disconnected = false;
      }
    } catch {
      // connection closed
    }
  }

  /** Connects (failing fast with an error naming the URL); reconnects forever once connected. */
  static async connect(opts: BusOptions): Promise<Bus> {
    createSubjects(opts.namespace ?? "mom"); // reject a bad namespace before connecting
    const logger = (opts.logger ?? pino({ name: opts.name, level: process.env.LOG_LEVEL ?? "info" })).child({ component: "bus" });
    const nc = await connectNats({ url: opts.url, name: opts.name, reconnectTimeWaitMs: opts.reconnectTimeWaitMs, logger });
    let jsm: JetStreamManager;
    try {
      jsm = await jetstreamManager(nc);
    } catch (err) {
      await nc.close().catch(() => {});
      throw new Error(noJetStreamMessage(shownUrl(opts.url), err), { cause: err });
    }
    return new Bus(nc, jetstream(nc), jsm, opts, logger);
  }

  /**
   * Creates or updates the IN, OUT, CTL, RECEIPTS and DLQ streams and the files Object Store
   * bucket. Idempotent; safe to race.
   */
  async provision(): Promise<void> {
    await provisionStreams(this.jsm, this.subjects, this.opts.streams, this.logger);
    const files = provisionFilesBucket(this.js, this.jsm, this.filesBucket, this.opts.streams, this.logger);
    this.files = files;
    files.catch(() => {
      if (this.files === files) this.files = undefined;
    });
    try {
      await files;
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new Error(`cannot provision object store bucket ${this.filesBucket}: ${reason}`, { cause: err });
    }
  }

  /**
   * Stores bytes in the files bucket under `name` (see `fileObjectName()` for unique names).
   * Large files are chunked by the Object Store; the digest is its SHA-256.
   */
  async putFile(name: string, bytes: Uint8Array, meta: PutFileMeta = {}): Promise<PutFileResult> {
    const store = await this.filesStore();
    const info = await store.putBlob(
      {
        name,
        ...(meta.description !== undefined && { description: meta.description }),
        ...(meta.mimeType !== undefined && { metadata: { mimeType: meta.mimeType } }),
      },
      bytes,
    );
    this.logger.debug({ bucket: this.filesBucket, name, size: info.size }, "file stored");
    return { name: info.name, size: info.size, digest: info.digest };
  }

  /** Size and metadata of a stored file; undefined when it does not exist (never put, expired). */
  async fileInfo(name: string): Promise<FileInfo | undefined> {
    const store = await this.filesStore();
    const info = await store.info(name);
    if (!info || info.deleted) return undefined;
    const mimeType = info.metadata?.mimeType;
    return {
      name: info.name,
      size: info.size,
      ...(mimeType && { mimeType }),
      ...(info.description && { description: info.description }),
    };
  }

  /**
   * A stored file's bytes (checked against its SHA-256), or undefined when it does not exist.
   * With `maxBytes`, a larger file throws FileTooLargeError before it is read.
   */
  async getFile(name: string, opts: { maxBytes?: number } = {}): Promise<Uint8Array | undefined> {
    return readObject(await this.filesStore(), name, opts.maxBytes);
  }

  /** JSON-encodes the payload and publishes it to JetStream with `Nats-Msg-Id: msgId`. */
  async publish(subject: string, payload: unknown, msgId: string, opts: PublishOptions = {}): Promise<PublishResult> {
    if (!msgId) throw new Error(`publish to ${subject}: a msgId is required`);
    const json = JSON.stringify(payload);
    if (json === undefined) throw new Error(`publish to ${subject}: payload is not JSON-serialisable`);
    const pubOpts: Partial<JetStreamPublishOptions> = { msgID: msgId };
    if (opts.timeoutMs) pubOpts.timeout = opts.timeoutMs;
    if (opts.traceparent || opts.headers) {
      const h = headers();
      for (const [k, v] of Object.entries(opts.headers ?? {})) h.set(k, v);
      if (opts.traceparent) h.set("traceparent", opts.traceparent);
      pubOpts.headers = h;
    }
    const cancelled = () => new Error(`publish to ${subject} (msgId ${msgId}) cancelled`);
    let stopped: Error | undefined;
    let stuck = 0;
    try {
      // Every error is retried until retryForMs (backoff 250 ms → 2 s), with the same msg id: a
      // restarting server answers with API errors too. An abort is looked at between attempts: a
      // publish that landed is never reported as cancelled.
      const ack = await pRetry(
        () => {
          if (opts.signal?.aborted) throw new AbortError((stopped = cancelled()));
          return this.publishStored(subject, json, pubOpts, msgId, opts).catch((err: unknown) => {
            if (err instanceof MsgIdInFlightError && opts.freshIdWhenStuck && ++stuck === 2) {
              pubOpts.msgID = `${msgId}~${nuid.next()}`;
              this.logger.warn({ subject, msgId, freshMsgId: pubOpts.msgID }, "the stream leader holds this msg-id as in flight with nothing stored (nats-server 2.10 after a leader change): sending it under a fresh msg-id");
            }
            throw err;
          });
        },
        {
          retries: Number.POSITIVE_INFINITY,
          maxRetryTime: opts.retryForMs ?? 0,
          minTimeout: 250,
          maxTimeout: 2000,
          shouldRetry: ({ attemptNumber, error }) => {
            if (this.nc.isClosed() || opts.signal?.aborted) return false;
            if (attemptNumber === 1 || attemptNumber % 10 === 0) this.logger.warn({ subject, msgId, attempt: attemptNumber, err: error }, "publish failed; retrying with the same msg-id");
            return true;
          },
        },
      );
      this.logger.debug({ subject, msgId, seq: ack.seq, duplicate: ack.duplicate }, "published");
      return { seq: ack.seq, duplicate: ack.duplicate };
    } catch (err) {
      if (err === stopped) throw err;
      throw new Error(`publish to ${subject} (msgId ${msgId}) failed: ${describePublishError(err)}`, { cause: err });
    }
  }

  /**
   * One publish attempt that resolves only with a sequence the stream stored the message at (or
   * the first copy of it, for a duplicate).
   *
   * A clustered stream's leader notes a msg-id when it proposes the message, before it is
   * committed. Asked again meanwhile, nats-server before 2.11 answers "duplicate" with sequence 0,
   * and 2.11+ answers error 10158 ("duplicate message id is in process"; nats-server #5827). Before
   * 2.11 the note also outlives a leader change that loses the proposal (#6486), so that answer
   * can come back for a message that never reaches the stream (test/chaos/msgid-in-flight.test.ts;
   * two scheduler replicas publish every tick at once, and one took it for the other's copy stored:
   * docs/scheduler.md). Such an answer is no confirmation: ask again with the same msg-id, 25 ms doubling to 500 ms,
   * until a sequence comes back (the first copy landed, or this one did), for up to the attempt's
   * timeout; then fail with MsgIdInFlightError, which callers retry like a timeout.
   */
  private async publishStored(subject: string, json: string, pubOpts: Partial<JetStreamPublishOptions>, msgId: string, opts: PublishOptions): Promise<PubAck> {
    const started = Date.now();
    const deadline = started + (opts.timeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS);
    for (let asked = 1, wait = 25; ; asked++, wait = Math.min(wait * 2, 500)) {
      try {
        const ack = await this.js.publish(subject, json, pubOpts);
        if (!ack.duplicate || ack.seq > 0) return ack;
      } catch (err) {
        if (!(err instanceof JetStreamApiError && err.code === MSG_ID_IN_PROCESS)) throw err;
      }
      if (Date.now() + wait > deadline || opts.signal?.aborted || this.nc.isClosed()) throw new MsgIdInFlightError(subject, msgId, asked, Date.now() - started);
      this.logger.debug({ subject, msgId, asked }, "msg-id in flight at the stream leader, nothing stored yet; asking again");
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  /**
   * Opens a key-value bucket, creating it when missing. `ttlMs` expires every key that long after
   * its last write (NATS 2.9 has no per-key TTL: a bucket is either all leases or all records).
   */
  async keyValue(bucket: string, opts: { ttlMs?: number; history?: number; replicas?: number } = {}): Promise<KV> {
    const replicas = opts.replicas ?? this.opts.streams?.replicas;
    const kvm = new Kvm(this.js);
    try {
      // An existing bucket is used as it is (another release or replica may have made it).
      return await retryTransient(`opening key-value bucket ${bucket}`, () =>
        kvm.create(bucket, {
          history: opts.history ?? 1,
          ...(opts.ttlMs !== undefined && { ttl: opts.ttlMs }),
          ...(replicas !== undefined && { replicas }),
        }),
        this.logger,
      );
    } catch (err) {
      // Lost a creation race to a replica with other settings: theirs will do.
      if (err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE) return kvm.open(bucket);
      const reason = err instanceof Error ? err.message : String(err);
      throw new Error(`cannot open key-value bucket ${bucket}: ${reason}`, { cause: err });
    }
  }

  /** Opens an existing key-value bucket; undefined when it does not exist (yet). */
  async existingKeyValue(bucket: string): Promise<KV | undefined> {
    try {
      const kv = await new Kvm(this.js).open(bucket, { bindOnly: true });
      await kv.status();
      return kv;
    } catch {
      return undefined;
    }
  }

  /** Reads a subject of a stream in order from a sequence, without a durable (see follow.ts). */
  follow<S extends TSchema>(opts: Omit<FollowOptions<S>, "stream"> & { stream: StreamKey }): Following {
    return follow(
      { js: this.js, jsm: this.jsm, subjects: this.subjects, logger: this.logger, validator: validator(opts.schema), isClosed: () => this.nc.isClosed() },
      { ...opts, stream: this.subjects.stream(opts.stream) },
    );
  }

  /** The last message stored on a subject, or undefined when there is none. */
  async lastMessage(stream: StreamKey, subject: string): Promise<{ seq: number; data: unknown } | undefined> {
    try {
      const m = await this.jsm.streams.getMessage(this.subjects.stream(stream), { last_by_subj: subject });
      return m ? { seq: m.seq, data: m.json() } : undefined;
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound) return undefined;
      throw err;
    }
  }

  /** Sequence and creation time of a stream: where "now" is, and which incarnation of it. */
  async streamState(stream: StreamKey): Promise<{ lastSeq: number; created: string }> {
    const info = await this.jsm.streams.info(this.subjects.stream(stream));
    return { lastSeq: info.state.last_seq, created: info.created };
  }

  /** A stream's retention limits and what it holds now; undefined when it does not exist (yet). */
  async streamSummary(stream: StreamKey): Promise<StreamSummary | undefined> {
    try {
      const { config, state } = await this.jsm.streams.info(this.subjects.stream(stream));
      return {
        maxAgeMs: config.max_age / 1_000_000,
        maxBytes: config.max_bytes,
        messages: state.messages,
        bytes: state.bytes,
        ...(state.messages > 0 && state.first_ts && { firstTs: state.first_ts }),
      };
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return undefined;
      throw err;
    }
  }

  /** The stream sequence below which a durable has acknowledged everything (0 when it does not exist). */
  async ackFloor(stream: StreamKey, durable: string): Promise<number> {
    try {
      return (await this.jsm.consumers.info(this.subjects.stream(stream), durable)).ack_floor.stream_seq;
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound) return 0;
      throw err;
    }
  }

  /** The server's version, e.g. "2.9.10". */
  get serverVersion(): string {
    return this.nc.info?.version ?? "unknown";
  }

  /** What the server this connection is on said at connect (its name, version, the cluster's URLs). */
  get serverInfo(): ServerInfo | undefined {
    return this.nc.info;
  }

  /** The connection's status changes (disconnect, reconnect, …) as nats.js reports them; ends when it closes. */
  status(): AsyncIterable<Status> {
    return this.nc.status();
  }

  /** A core NATS subscription (not JetStream): what is published on `subject` from now on. */
  subscribe(subject: string, opts?: SubscriptionOptions): Subscription {
    return this.nc.subscribe(subject, opts);
  }

  /**
   * A core NATS request (not JetStream): `payload` as JSON, the first answer's text. Rejects when
   * nobody subscribes to `subject` ("no responders") or no answer comes within `timeoutMs`.
   */
  async request(subject: string, payload: unknown, timeoutMs: number): Promise<string> {
    const m = await this.nc.request(subject, JSON.stringify(payload), { timeout: timeoutMs });
    return m.string();
  }

  /** This account's JetStream usage and limits (streams, consumers, storage). */
  accountInfo(): Promise<JetStreamAccountStats> {
    return this.jsm.getAccountInfo();
  }

  /**
   * A stream's configuration and state (with `subjectsFilter`, the message count of each subject
   * matching it in `state.subjects`); undefined when it does not exist (yet).
   */
  async streamInfo(stream: StreamKey, opts: { subjectsFilter?: string } = {}): Promise<StreamInfo | undefined> {
    try {
      return await this.jsm.streams.info(this.subjects.stream(stream), opts.subjectsFilter ? { subjects_filter: opts.subjectsFilter } : undefined);
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return undefined;
      throw err;
    }
  }

  /** Whether a stream of this full name exists (readers that must not create one, e.g. the usage ledger's). */
  async hasStream(name: string): Promise<boolean> {
    try {
      await this.jsm.streams.info(name);
      return true;
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return false;
      throw err;
    }
  }

  /** The message stored at `seq` of a stream (its payload as stored), or undefined when there is none (deleted, purged). */
  async storedMessage(stream: StreamKey, seq: number): Promise<{ seq: number; subject: string; data: Uint8Array; headers: Record<string, string>; time: Date } | undefined> {
    try {
      const m = await this.jsm.streams.getMessage(this.subjects.stream(stream), { seq });
      if (!m) return undefined;
      const h: Record<string, string> = {};
      for (const [k, v] of m.header ?? []) h[k] = v[0] ?? "";
      return { seq: m.seq, subject: m.subject, data: m.data, headers: h, time: m.time };
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound) return undefined;
      throw err;
    }
  }

  /** Removes every message of the stream named `stream` (e.g. `subjects.stream("IN")`, or a record stream's). */
  async purgeStream(stream: string): Promise<void> {
    await this.jsm.streams.purge(stream);
  }

  /** Publishes a DeadLetter on `<ns>.dlq.<stage>` and logs the reason. */
  deadLetter(stage: string, input: DeadLetterInput): Promise<void> {
    return this.publishDeadLetter(stage, input);
  }

  /** Starts a typed consumption; resolves once the durable exists and pulling has begun. */
  async consume<S extends TSchema>(opts: ConsumeOptions<S>): Promise<Consumption> {
    if (this.drainPromise) throw new Error("bus is draining: cannot start a consumption");
    const c = new PullConsumption(
      {
        nc: this.nc,
        js: this.js,
        jsm: this.jsm,
        subjects: this.subjects,
        logger: this.logger,
        drainTimeoutMs: this.drainTimeoutMs,
        deadLetter: (stage, input, dedupeId) => this.publishDeadLetter(stage, input, dedupeId),
        provision: () => this.provision(),
        onStopped: () => this.consumptions.delete(c),
      },
      opts,
    );
    await c.start();
    this.consumptions.add(c);
    return c;
  }

  /** Stops every consumption (waiting up to drainTimeoutMs for handlers), then drains the connection. Idempotent. */
  drain(): Promise<void> {
    this.drainPromise ??= (async () => {
      await Promise.all([...this.consumptions].map((c) => c.stop()));
      if (!this.nc.isClosed()) {
        const drained = this.nc.drain().then(() => true, () => false);
        const timedOut = new Promise<boolean>((r) => setTimeout(() => r(false), 5000).unref());
        if (!(await Promise.race([drained, timedOut]))) await this.nc.close().catch(() => {});
      }
      this.logger.info("bus drained");
    })();
    return this.drainPromise;
  }

  /** The bucket opened by provision(), or opened on first use by a service that did not provision. */
  private filesStore(): Promise<ObjectStore> {
    if (!this.files) {
      const opening = new Objm(this.js).open(this.filesBucket).catch((err: unknown) => {
        if (this.files === opening) this.files = undefined;
        const reason = err instanceof Error ? err.message : String(err);
        throw new Error(`object store bucket ${this.filesBucket} is not available (run provision()): ${reason}`, { cause: err });
      });
      this.files = opening;
    }
    return this.files;
  }

  private get drainTimeoutMs(): number {
    return this.opts.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  }

  private async publishDeadLetter(stage: string, input: DeadLetterInput, dedupeId?: string): Promise<void> {
    const dlqSubject = this.subjects.dlq(stage);
    const id = dedupeId ?? (input.msgId ? `${input.subject}:${input.msgId}` : nuid.next());
    const { seq, duplicate } = await this.publish(dlqSubject, buildDeadLetter(stage, input), `dlq:${stage}:${id}`);
    if (!duplicate) metrics.deadLetters.inc({ stage });
    this.logger.warn(
      { stage, subject: input.subject, msgId: input.msgId, reason: input.reason, dlqSubject, dlqSeq: seq },
      `dead-lettered: ${input.reason}`,
    );
  }
}
