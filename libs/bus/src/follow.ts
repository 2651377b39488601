import { parsePayload, type Subjects, type Validator } from "@mom/contracts";
import { type ConsumerMessages, DeliverPolicy, type JetStreamClient, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import type { Logger } from "pino";
import type { Static, TSchema } from "typebox";
import type { Delivery } from "./consume-types.js";
import { msgIdOf, traceparentOf } from "./process-message.js";

export interface FollowOptions<S extends TSchema> {
  stream: string;
  /** One subject (wildcards allowed). */
  filterSubject: string;
  /** First stream sequence to read, or "new" for messages published from now on. */
  from: number | "new";
  schema: S;
  /**
   * Called once per message, in stream order, one at a time. An invalid payload is skipped and
   * reported through onInvalid: a follower reads what a durable consumer already dead-lettered.
   */
  handler: (d: Delivery<Static<S>>) => void | Promise<void>;
  onInvalid?: (seq: number, reason: string) => void;
  /** How long a message announced through expect() may keep the feed waiting before it is re-opened. */
  stallMs?: number;
  /** How often the server says the feed's pull is alive (at most half the pull's 30 s expiry); two missed and nats.js pulls afresh. */
  heartbeatMs?: number;
}

export interface Following {
  /** Stops reading; the handler is not called again. Idempotent. */
  stop(): void;
  /** Resolves when the reading loop has ended (after stop(), or when the connection closed). */
  readonly done: Promise<void>;
  /**
   * Message `seq` of this subject is known to be in the stream (another reader saw it). If the
   * feed has not handed it out within stallMs, the feed is re-opened from where it is, and says so.
   */
  expect(seq: number): void;
}

/**
 * Long enough for a busy process to take a delivered message in; short against the 45 s a lost pull
 * costs. On a NATS cluster a feed whose consumer died with its server makes its channel wait for
 * the election plus this (2.5 s, was 5 s: answers after a kill -9 of MOM_IN's leader waited up to
 * 10.7 s in cluster-chaos).
 */
const STALL_MS = 2500;
/**
 * nats.js's default is half the pull's 30 s expiry, so a feed whose consumer or pull the server
 * lost sat still for 45 s before nats.js noticed. 5 s bounds that at about 15 s for every feed,
 * including those expect() never hears about (messages another runner discovered), at one small
 * message per feed every 5 s while it is idle.
 */
const HEARTBEAT_MS = 5000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/**
 * What nats.js says about a feed that is not getting messages: a stalled feed must not be silent.
 * Missed heartbeats mean the consumer is gone (on a cluster it lives on one server, and dies with
 * it): the feed is re-opened from where it is at once. nats.js would re-check the consumer with a
 * backoff of up to 30 s and ignore further missed heartbeats meanwhile (reader stalls of 24-75 s
 * after a node was killed, seen in test/chaos/cluster-chaos.test.ts).
 */
async function reportTrouble(messages: ConsumerMessages, log: Logger, reopen: () => void): Promise<void> {
  try {
    for await (const s of messages.status()) {
      if (s.type === "heartbeat" || s.type === "next" || s.type === "discard" || s.type === "flow_control") continue;
      if (s.type === "debug" && s.code === 408) continue; // a pull that expired empty: routine
      if (s.type === "heartbeats_missed" || s.type === "consumer_deleted" || s.type === "consumer_not_found") {
        log.warn({ status: s }, "the subject's feed lost its consumer; re-opening the feed");
        return reopen();
      }
      log.warn({ status: s }, "the subject's feed reported trouble");
    }
  } catch {
    // the feed stopped
  }
}

/**
 * Reads a subject in stream order from a given sequence with an ordered consumer: no durable
 * state on the server, no acks, no redelivery delay. nats.js re-creates the consumer after a
 * server restart or a gap, resuming after the last sequence it handed out, so nothing is skipped
 * or repeated; this loop re-opens it when it fails outright.
 */
export function follow<S extends TSchema>(
  deps: { js: JetStreamClient; jsm: JetStreamManager; subjects: Subjects; logger: Logger; validator: Validator<S>; isClosed: () => boolean },
  opts: FollowOptions<S>,
): Following {
  let stopped = false;
  let messages: ConsumerMessages | undefined;
  let next = opts.from;
  let handling = false;
  let expected = 0;
  let watch: NodeJS.Timeout | undefined;
  const stallMs = opts.stallMs ?? STALL_MS;
  const log = deps.logger.child({ stream: opts.stream, follow: opts.filterSubject });

  // nats.js notices a consumer or pull request the server no longer holds only after two missed
  // heartbeats (HEARTBEAT_MS): a message seen elsewhere tells sooner.
  const checkStall = () => {
    watch = undefined;
    if (stopped || deps.isClosed() || typeof next !== "number" || next > expected) return;
    if (!handling) {
      log.warn({ waitingFor: expected, next, stallMs }, "the subject's feed stalled: a message in the stream did not arrive; re-opening the feed");
      messages?.stop();
    }
    watch = setTimeout(checkStall, stallMs).unref();
  };

  const handle = async (msg: JsMsg) => {
    next = msg.seq + 1;
    handling = true;
    try {
      await deliver(msg);
    } finally {
      handling = false;
    }
  };

  const deliver = async (msg: JsMsg) => {
    const parsed = parsePayload(deps.validator, msg.data);
    if (!parsed.ok) return opts.onInvalid?.(msg.seq, parsed.reason);
    const ref = deps.subjects.parse(msg.subject);
    await opts.handler({
      subject: msg.subject,
      data: parsed.value,
      msgId: msgIdOf(msg),
      traceparent: traceparentOf(msg),
      streamSeq: msg.seq,
      deliveryCount: 1,
      redelivered: false,
      channel: ref ? { adapter: ref.adapter, channelId: ref.channelId } : undefined,
    });
  };

  const done = (async () => {
    let failures = 0;
    while (!stopped && !deps.isClosed()) {
      try {
        // "new" is pinned to a sequence once, so a re-open after a failure skips nothing.
        if (next === "new") next = (await deps.jsm.streams.info(opts.stream)).state.last_seq + 1;
        const consumer = await deps.js.consumers.get(opts.stream, {
          filter_subjects: opts.filterSubject,
          deliver_policy: DeliverPolicy.StartSequence,
          opt_start_seq: Math.max(1, next),
        });
        if (stopped) break;
        messages = await consumer.consume({ idle_heartbeat: opts.heartbeatMs ?? HEARTBEAT_MS });
        if (stopped) messages.stop();
        const open = messages;
        void reportTrouble(open, log, () => open.stop());
        for await (const msg of messages) {
          if (stopped) break;
          failures = 0;
          await handle(msg);
        }
      } catch (err) {
        if (stopped || deps.isClosed()) break;
        failures++;
        const retryInMs = Math.min(200 * 2 ** (failures - 1), 5000);
        log.warn({ err, retryInMs }, "following a subject failed; retrying");
        await sleep(retryInMs);
      } finally {
        messages = undefined;
      }
    }
  })();

  return {
    stop() {
      stopped = true;
      clearTimeout(watch);
      messages?.stop();
    },
    done,
    expect(seq) {
      expected = Math.max(expected, seq);
      if (!stopped && !watch && !(typeof next === "number" && next > seq)) watch = setTimeout(checkStall, stallMs).unref();
    },
  };
}
