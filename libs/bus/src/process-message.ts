import { parsePayload, type Subjects, type Validator } from "@mom/contracts";
import type { JsMsg } from "@nats-io/jetstream";
import { metrics } from "@mom/observability";
import type { Logger } from "pino";
import type { Static, TSchema } from "typebox";
import { type Delivery, RejectedInput } from "./consume-types.js";
import type { DeadLetterInput } from "./dead-letter.js";

export interface ProcessContext<S extends TSchema> {
  stream: string;
  durable: string;
  validator: Validator<S>;
  handler: (d: Delivery<Static<S>>) => Promise<void>;
  maxDeliver: number;
  subjects: Subjects;
  /** Already bound to stage/stream/durable. */
  logger: Logger;
  /** Publishes to this consumption's DLQ stage; dedupeId makes a repeated reject of one message a no-op. */
  deadLetter(input: DeadLetterInput, dedupeId: string): Promise<void>;
  /** Acks a handled message (at once, or with the connection's next write). */
  ack(msg: JsMsg): void;
}

export function msgIdOf(msg: JsMsg): string | undefined {
  return msg.headers?.get("Nats-Msg-Id") || undefined;
}

/** The W3C trace context its publisher sent, if any. */
export function traceparentOf(msg: JsMsg): string | undefined {
  return msg.headers?.get("traceparent") || undefined;
}

/** Redelivery delay after a failed handler: 250 ms per delivery so far, at most 10 s. */
export function retryDelayMs(deliveryCount: number): number {
  return Math.min(250 * Math.max(1, deliveryCount), 10_000);
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Validates, runs the handler and settles the message: ack on success, DLQ + ack on invalid input,
 * nak with backoff on a failed handler, DLQ + term when the last allowed delivery fails.
 * Never throws.
 */
export async function processMessage<S extends TSchema>(ctx: ProcessContext<S>, msg: JsMsg): Promise<void> {
  const msgId = msgIdOf(msg);
  const deliveryCount = msg.info.deliveryCount;
  if (deliveryCount > 1) metrics.redeliveries.inc({ stream: ctx.stream, consumer: ctx.durable });
  // Made only when something is logged: a pino child serialises its bindings up front, and most
  // messages log nothing here.
  let child: Logger | undefined;
  const log = () => (child ??= ctx.logger.child({ subject: msg.subject, msgId, streamSeq: msg.seq, deliveryCount }));
  const lastTry = ctx.maxDeliver > 0 && deliveryCount >= ctx.maxDeliver;
  const dedupeId = msgId ? `${ctx.stream}:${msg.seq}:${msgId}` : `${ctx.stream}:${msg.seq}`;
  const settle = (what: string, fn: () => void) => {
    try {
      fn();
    } catch (err) {
      log().warn({ err }, `could not ${what} message (it will be redelivered)`);
    }
  };
  const deadLetter = async (reason: string): Promise<boolean> => {
    try {
      await ctx.deadLetter({ subject: msg.subject, data: msg.data, reason, msgId }, dedupeId);
      return true;
    } catch (err) {
      log().error({ err, reason }, "could not publish dead letter");
      return false;
    }
  };

  const reject = async (reason: string): Promise<void> => {
    if (await deadLetter(reason)) return settle("ack", () => msg.ack());
    if (lastTry) {
      log().error({ reason }, "invalid message dropped: dead letter failed on the last delivery");
      return settle("term", () => msg.term());
    }
    return settle("nak", () => msg.nak(retryDelayMs(deliveryCount)));
  };

  const parsed = parsePayload(ctx.validator, msg.data);
  if (!parsed.ok) return reject(parsed.reason);

  const parsedSubject = ctx.subjects.parse(msg.subject);
  const delivery: Delivery<Static<S>> = {
    subject: msg.subject,
    data: parsed.value,
    msgId,
    traceparent: traceparentOf(msg),
    streamSeq: msg.seq,
    deliveryCount,
    redelivered: msg.redelivered,
    channel: parsedSubject ? { adapter: parsedSubject.adapter, channelId: parsedSubject.channelId } : undefined,
  };
  try {
    await ctx.handler(delivery);
  } catch (err) {
    if (err instanceof RejectedInput) return reject(err.message);
    if (!lastTry) {
      const retryInMs = retryDelayMs(deliveryCount);
      log().warn({ err, retryInMs }, `handler failed: ${errorMessage(err)}`);
      return settle("nak", () => msg.nak(retryInMs));
    }
    const reason = `handler failed after ${deliveryCount} deliveries: ${errorMessage(err)}`;
    log().error({ err }, reason);
    await deadLetter(reason);
    return settle("term", () => msg.term());
  }
  settle("ack", () => ctx.ack(msg));
}
