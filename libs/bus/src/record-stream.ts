import { DeliverPolicy, DiscardPolicy, RetentionPolicy, StorageType, type StreamConfig } from "@nats-io/jetstream";
import { nanos } from "@nats-io/nats-core";
import type { Bus } from "./bus.js";
import { namespacedName } from "./json-kv.js";
import { ensureStream } from "./provision.js";
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
  append(suffix: string, record: unknown, msgId: string): Promise<{ seq: number; duplicate: boolean }>;
  /** Records published at or after `since`, in stream order, up to the last one present now. */
  readSince(since: Date): Promise<StreamRecord[]>;
  /** Replays from `since`, then delivers new records as they arrive; `caughtUp` resolves after the replay. */
  follow(since: Date, onRecord: (r: StreamRecord) => void): Promise<{ caughtUp: Promise<void>; stop(): Promise<void> }>;
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
  await ensureStream(bus.jsm, cfg, bus.logger);

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

  const orderedFrom = (since: Date) =>
    bus.js.consumers.get(stream, { filter_subjects: filter, deliver_policy: DeliverPolicy.StartTime, opt_start_time: since.toISOString() });

  return {
    stream,
    subject: (suffix) => `${ns}.${opts.token}.${suffix}`,
    async append(suffix, record, msgId) {
      return bus.publish(`${ns}.${opts.token}.${suffix}`, record, msgId, { retryForMs: 5000 });
    },
    async readSince(since) {
      return (await readRange(bus, stream, filter, { time: since })).map((m) => recordOf(m.seq, m.subject, m.text));
    },
    async follow(since, onRecord) {
      const last = (await bus.jsm.streams.info(stream)).state.last_seq;
      const consumer = await orderedFrom(since);
      const messages = await consumer.consume();
      let markCaughtUp!: () => void;
      const caughtUp = new Promise<void>((r) => (markCaughtUp = r));
      if (last === 0) markCaughtUp();
      const loop = (async () => {
        for await (const m of messages) {
          onRecord(toRecord(m));
          if (m.seq >= last || m.info.pending === 0) markCaughtUp();
        }
      })();
      // A stream whose records are all older than `since` delivers nothing to replay.
      void (async () => {
        const info = await consumer.info(true).catch(() => undefined);
        if (info && info.num_pending === 0 && info.delivered.stream_seq === 0) markCaughtUp();
      })();
      return {
        caughtUp,
        async stop() {
          await messages.close();
          await loop.catch(() => {});
        },
      };
    },
  };
}
