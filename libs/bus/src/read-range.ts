import { type Consumer, DeliverPolicy, type JsMsg, type OrderedConsumerOptions } from "@nats-io/jetstream";
import { type Bus, connectionOf } from "./bus.js";
import { msgIdOf } from "./process-message.js";

/** One stored message as it is, for readers that show traffic (replay, tail) rather than act on it. */
export interface RawMessage {
  /** Stream name, e.g. MOM_IN */
  stream: string;
  seq: number;
  subject: string;
  /** When JetStream stored it. */
  time: Date;
  msgId?: string;
  /** The payload as text (mom's payloads are JSON). */
  text: string;
}

export type RangeStart = { seq: number } | { time: Date } | "first" | "new";

function toRaw(stream: string, m: JsMsg): RawMessage {
  const msgId = msgIdOf(m);
  return { stream, seq: m.seq, subject: m.subject, time: m.time, ...(msgId && { msgId }), text: new TextDecoder().decode(m.data) };
}

function startOptions(start: RangeStart): Partial<OrderedConsumerOptions> {
  if (start === "first") return { deliver_policy: DeliverPolicy.All };
  if (start === "new") return { deliver_policy: DeliverPolicy.New };
  if ("seq" in start) return { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: Math.max(1, start.seq) };
  return { deliver_policy: DeliverPolicy.StartTime, opt_start_time: start.time.toISOString() };
}

/**
 * Reads an ordered consumer (ephemeral, no acks, so no durable consumer of a live service is
 * touched and the server forgets the reader once it is done) until `visit` says it has what it
 * wants or nothing more is pending. `leave`: the consumer is not deleted but expires once idle,
 * for a user that may not delete consumers on that stream.
 */
async function readOrdered(bus: Bus, stream: string, opts: Partial<OrderedConsumerOptions>, visit: (m: JsMsg) => boolean, leave = false): Promise<void> {
  const consumer: Consumer = await connectionOf(bus).js.consumers.get(stream, opts);
  try {
    if ((await consumer.info()).num_pending === 0) return;
    for (;;) {
      const batch = await consumer.fetch({ max_messages: 500, expires: 2000 });
      let got = 0;
      let done = false;
      for await (const m of batch) {
        got++;
        done = visit(m) || m.info.pending === 0;
        // Leaving the batch now spares waiting out its expiry for messages that will not come.
        if (done) break;
      }
      if (done || got === 0) break;
    }
  } finally {
    if (!leave) await consumer.delete().catch(() => {});
  }
}

/**
 * Reads what a stream holds now on `filter`, from `start` up to `until` (stored at or before).
 * `leaveToExpire`: the reader is left to the server to remove 10 s after the read instead of
 * deleted (an ingress's NATS user may not delete consumers on MOM_OUT, where another adapter's are).
 */
export async function readRange(bus: Bus, stream: string, filter: string, start: RangeStart, until?: Date, o: { leaveToExpire?: boolean } = {}): Promise<RawMessage[]> {
  const last = (await connectionOf(bus).jsm.streams.info(stream)).state.last_seq;
  const out: RawMessage[] = [];
  if (last === 0 || start === "new") return out;
  const expiry = o.leaveToExpire ? { inactive_threshold: 10_000 } : {};
  const visit = (m: JsMsg) => {
    if (until && m.time > until) return true;
    out.push(toRaw(stream, m));
    return m.seq >= last;
  };
  await readOrdered(bus, stream, { filter_subjects: filter, ...startOptions(start), ...expiry }, visit, o.leaveToExpire);
  return out;
}

/**
 * The newest stored message of every subject matching `filter` (an ordered consumer delivering the
 * last per subject), e.g. the last inbound message of each channel of one adapter. A user whose
 * consumer creation is scoped to its own subjects can read exactly those.
 */
export async function lastPerSubject(bus: Bus, stream: string, filter: string): Promise<RawMessage[]> {
  const out: RawMessage[] = [];
  if ((await connectionOf(bus).jsm.streams.info(stream)).state.messages === 0) return out;
  await readOrdered(bus, stream, { filter_subjects: filter, deliver_policy: DeliverPolicy.LastPerSubject }, (m) => {
    out.push(toRaw(stream, m));
    return false;
  });
  return out;
}

export interface Watching {
  stop(): Promise<void>;
}

/** Calls `onMessage` for every message stored on `filter` from now on (ordered consumer, as above). */
export function watchNew(bus: Bus, stream: string, filter: string, onMessage: (m: RawMessage) => void): Promise<Watching> {
  return followFrom(bus, stream, filter, "new", onMessage);
}

/**
 * Calls `onMessage` for every message stored on `filter` from `start` on, what is there first and
 * then each new one as it is stored (one ordered consumer: a reader that must not miss what is
 * stored between reading the past and watching the new, as the web console's live views).
 */
export async function followFrom(bus: Bus, stream: string, filter: string, start: RangeStart, onMessage: (m: RawMessage) => void): Promise<Watching> {
  const consumer = await connectionOf(bus).js.consumers.get(stream, { filter_subjects: filter, ...startOptions(start) });
  const messages = await consumer.consume();
  const loop = (async () => {
    for await (const m of messages) onMessage(toRaw(stream, m));
  })();
  return {
    async stop() {
      await messages.close();
      await loop.catch(() => {});
    },
  };
}
