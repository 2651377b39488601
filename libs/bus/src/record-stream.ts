import { AckPolicy, DeliverPolicy, DiscardPolicy, RetentionPolicy, StorageType, type StreamConfig } from "@nats-io/jetstream";
import { nanos, nuid } from "@nats-io/nats-core";
import { type Bus, connectionOf } from "./bus.js";
import { namespacedName } from "./json-kv.js";
import { ensureStream } from "./provision.js";
import { retryTransient } from "./transient.js";
import { readRange } from "./read-range.js";

/**
 * An append-only stream of records kept for a long time (e.g. the usage ledger): each record is
 * one JSON message on `<ns>.<token>.<rest>`, deduplicated by msg id. Readers replay it from a
 * point in time and then follow it, so every service that reads it sees the same history.
 */
export interface RecordStream {
  readonly stream: string;
  /** `<ns>.<token>.<suffix>` */
  subject(suffix: string): string;
  /** Retried through a NATS outage for `retryForMs` (default 5 s) with the same msg id, so it lands once. */
  append(suffix: string, record: unknown, msgId: string, opts?: { retryForMs?: number }): Promise<{ seq: number; duplicate: boolean }>;
  /** Records published at or after `since`, in stream order, up to the last one present now. */
  readSince(since: Date): Promise<StreamRecord[]>;
  /**
   * Replays from `since`, then delivers new records as they arrive; `caughtUp` resolves after the
   * replay. While it has not, a warning says what it waits for every `warnEveryMs` (10 s).
   */
  follow(since: Date, onRecord: (r: StreamRecord) => void, opts?: { warnEveryMs?: number }): Promise<{ caughtUp: Promise<void>; stop(): Promise<void> }>;
}

export interface StreamRecord {
  seq: number;
  subject: string;
  /** Parsed JSON, not yet validated: readers check it against their schema. */
  data: unknown;
  /** The raw text, for a reader that must report a record it could not parse. */
  text: string;
}

export interface RecordStreamOptions {
  /** Stream suffix (`MOM_<key>`) and subject token (`mom.<token>.>`). */
  key: string;
  token: string;
  maxAgeMs: number;
  replicas?: number;
}

export async function openRecordStream(bus: Bus, opts: RecordStreamOptions): Promise<RecordStream> {
  const ns = bus.subjects.namespace;
  const stream = namespacedName(bus, opts.key);
  const filter = `${ns}.${opts.token}.>`;
  const cfg = {
    name: stream,
    subjects: [filter],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_age: nanos(opts.maxAgeMs),
    duplicate_window: nanos(120_000),
    max_bytes: -1,
    num_replicas: opts.replicas ?? 1,
  } as StreamConfig;
  await retryTransient(`provisioning stream ${stream}`, () => ensureStream(connectionOf(bus).jsm, cfg, bus.logger), bus.logger);

  const recordOf = (seq: number, subject: string, text: string): StreamRecord => {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      data = undefined;
    }
    return { seq, subject, data, text };
  };
  const toRecord = (m: { seq: number; subject: string; data: Uint8Array }) => recordOf(m.seq, m.subject, new TextDecoder().decode(m.data));

  /**
   * The stream sequence `since` begins at, from a throwaway consumer made at that start time: the
   * server reports the sequence just before the start as delivered (the last one when every record
   * is older than `since`, so "delivered 0" is no sign that there is nothing to replay).
   */
  const startOf = async (since: Date): Promise<number> => {
    const probe = await connectionOf(bus).jsm.consumers.add(stream, {
      // Named, so that nats.js asks on $JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>: the subject
      // a least-privilege user is allowed (deploy/nats/auth.conf), not the unnamed legacy one.
      name: `probe-${nuid.next()}`,
      filter_subject: filter,
      deliver_policy: DeliverPolicy.StartTime,
      opt_start_time: since.toISOString(),
      ack_policy: AckPolicy.None,
      mem_storage: true,
      inactive_threshold: nanos(60_000),
    });
    await connectionOf(bus).jsm.consumers.delete(stream, probe.name).catch(() => {});
    return probe.delivered.stream_seq + 1;
  };
  return {
    stream,
    subject: (suffix) => `${ns}.${opts.token}.${suffix}`,
    async append(suffix, record, msgId, o = {}) {
      return bus.publish(`${ns}.${opts.token}.${suffix}`, record, msgId, { retryForMs: o.retryForMs ?? 5000 });
    },
    async readSince(since) {
      return (await readRange(bus, stream, filter, { time: since })).map((m) => recordOf(m.seq, m.subject, m.text));
    },
    async follow(since, onRecord, o = {}) {
      // Ordered from a sequence, not a time: nats.js re-makes an ordered consumer (after a NATS
      // restart) with its start time still beside the new start sequence, which the server
      // refuses, and a follower made from a time would stop for good.
      const consumer = await connectionOf(bus).js.consumers.get(stream, { filter_subjects: filter, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: await startOf(since) });
      const toReplay = (await consumer.info(true)).num_pending;
      // Read after the consumer was made, so every record it counted is at or below it.
      const last = (await connectionOf(bus).jsm.streams.info(stream)).state.last_seq;
      const messages = await consumer.consume();
      let delivered = 0;
      let toGo = toReplay;
      let markCaughtUp!: () => void;
      const caughtUp = new Promise<void>((r) => (markCaughtUp = r));
      // A reader that is not ready says why rather than hang silently (it is not ready until this resolves).
      const warning = setInterval(
        () =>
          bus.logger.warn(
            { stream, since: since.toISOString(), delivered, toGo, waitingForSeq: last },
            `still replaying ${stream} records since ${since.toISOString()}: ${delivered} delivered, ${toGo} to go (waiting for stream sequence ${last})`,
          ),
        o.warnEveryMs ?? 10_000,
      );
      warning.unref();
      void caughtUp.then(() => clearInterval(warning));
      if (toReplay === 0) markCaughtUp();
      const loop = (async () => {
        for await (const m of messages) {
          delivered++;
          toGo = m.info.pending;
          onRecord(toRecord(m));
          // Pending may never reach 0 while others append: reaching the last record present at the start is enough.
          if (m.seq >= last || m.info.pending === 0) markCaughtUp();
        }
      })().catch((err: unknown) => bus.logger.error({ stream, err }, `stopped following ${stream}`));
      return {
        caughtUp,
        async stop() {
          clearInterval(warning);
          await messages.close();
          await loop;
        },
      };
    },
  };
}
