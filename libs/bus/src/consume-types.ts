import type { ChannelRef, StreamKey } from "@mom/contracts";
import type { Static, TSchema } from "typebox";

export interface ConsumeOptions<S extends TSchema> {
  /** Stream to read: "IN" | "OUT" | "CTL" | "RECEIPTS" | "DLQ". */
  stream: StreamKey;
  /** Durable consumer name; created or updated idempotently (AckExplicit). Replicas sharing it share the work. */
  durable: string;
  /** ONE subject, wildcards allowed (NATS 2.9 has no filter_subjects arrays). */
  filterSubject: string;
  /**
   * Where a newly created durable starts: "all" (default), "new", or the messages stored since
   * `startTime` (by the server's clock). Ignored when the durable exists.
   */
  deliver?: "all" | "new" | { startTime: Date };
  /** Payloads are JSON-decoded and validated against it; rejects go to the DLQ. */
  schema: S;
  /** DLQ stage name for rejects, e.g. "agent-runner". */
  stage: string;
  handler: (d: Delivery<Static<S>>) => Promise<void>;
  /** Handlers running at once (default 1: strictly sequential). Handlers start in delivery order. */
  maxInFlight?: number;
  /** Consumer ack wait (default 30 s). While a handler runs the bus calls working() every ackWaitMs/3. */
  ackWaitMs?: number;
  /** Deliveries before a failing message is dead-lettered and terminated (default 5). */
  maxDeliver?: number;
  /**
   * Sends each ack with the connection's next write (at most 100 ms later) rather than in a write
   * of its own: one socket write less per message when messages come one at a time. Only for
   * handlers that may run again after a crash, as a message whose ack was still waiting is
   * redelivered.
   */
  ackWithNextWrite?: boolean;
  /**
   * Keeps delivery order through a lost pull: messages the server sent into a pull that never
   * reached this process (its server died or froze, the consumer's leader changed) stay pending on
   * the server until their ack wait runs out, while a new pull would get the messages after them at
   * once. With this set, after a failed or cut pull (and when starting, for what a process that died
   * held) the consumer is pulled again only once the last pull has expired and the server counts no
   * more deliveries pending than this process holds, or else once their ack wait has run out: the
   * server then redelivers them first, in order. For consumers whose handlers must see a channel's
   * messages in order (an ingress drawing runs); pair it with a short `ackWaitMs` and
   * `pullExpiresMs`, which bound that pause.
   */
  keepOrderThroughLostPulls?: boolean;
  /** Advanced: how long one pull request waits on the server (default 30 s, min 1 s). */
  pullExpiresMs?: number;
}

export interface Delivery<T> {
  subject: string;
  data: T;
  /** The publisher's Nats-Msg-Id, when it set one. */
  msgId?: string;
  /** The publisher's W3C trace context (`traceparent` header), when it sent one. */
  traceparent?: string;
  streamSeq: number;
  /** 1 on the first delivery. */
  deliveryCount: number;
  redelivered: boolean;
  /** Set when the subject is a channel subject (`<ns>.<kind>.<adapter>.<escaped channel>`). */
  channel?: ChannelRef;
}

export interface Consumption {
  /** Stops pulling, then waits for in-flight handlers (up to the bus drain timeout). Idempotent. */
  stop(): Promise<void>;
}

/**
 * Thrown by a handler for input that is well-formed but must not be handled (an adapter that is not
 * configured, a payload that contradicts its subject): the message is dead-lettered with this
 * message as the reason and acked at once, never retried.
 */
export class RejectedInput extends Error {
  override name = "RejectedInput";
}
