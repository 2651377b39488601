import type { Subjects } from "@mom/contracts";
import { applyDecorators, Catch, type InjectionToken, type RpcExceptionFilter, UseFilters } from "@nestjs/common";
import { EventPattern } from "@nestjs/microservices";
import { type Observable, throwError } from "rxjs";
import type { Static, TSchema } from "typebox";
import type { ConsumeOptions, Delivery } from "./consume-types.js";

/**
 * The transport id of the JetStream strategy. Handlers declared for it are bound by it alone, so
 * an app with another transport too (an HTTP app's) never hands them that transport's traffic.
 */
export const JETSTREAM = Symbol("mom.jetstream");

/** A durable pull consumer as `bus.consume` takes it, less what the declaration itself supplies. */
export type JetStreamConsumer = Omit<ConsumeOptions<TSchema>, "schema" | "handler">;

export interface JetStreamHandlerOptions<S extends TSchema, A extends unknown[] = []> {
  /** Every payload is validated against it before the handler sees it; a reject is dead-lettered. */
  schema: S;
  /** Providers the consumer is built from, passed to `consumer` after the bus's subjects. */
  inject?: InjectionToken[];
  /**
   * The consumer, built when the service starts listening. A function, not a constant, because
   * what names it is known only then: the namespace (in `subjects`) always, and for an ingress
   * its adapter — one service class serves any adapter name config.json gives it.
   */
  consumer: (subjects: Subjects, ...injected: A) => JetStreamConsumer;
}

/** Where a handler's declaration rides in its @EventPattern extras. */
const EXTRAS_KEY = "jetstream";

/**
 * Hands a handler's error to the strategy as thrown. Nest's default RPC filter would put
 * "Internal server error" in its place, and the bus needs the error itself: a RejectedInput is
 * dead-lettered at once with its message, any other is retried and, when deliveries run out,
 * dead-lettered with its message.
 */
@Catch()
class PassErrorToJetStream implements RpcExceptionFilter {
  catch(err: unknown): Observable<never> {
    return throwError(() => err);
  }
}

/**
 * Declares a method of a Nest controller as the handler of one JetStream durable consumer: an
 * @EventPattern of the JetStream transport whose extras carry the consumer. The method receives
 * the validated `Delivery`; resolving acks the message, throwing naks it (see README.md).
 */
export function JetStreamHandler<S extends TSchema, A extends unknown[] = []>(options: JetStreamHandlerOptions<S, A>) {
  return <M extends (d: Delivery<Static<S>>, ...rest: never[]) => unknown>(target: object, key: string | symbol, descriptor: TypedPropertyDescriptor<M>): void => {
    // The pattern only has to be unique in the app: the consumer it stands for is named at listen time.
    const pattern = { jetstream: `${target.constructor.name}.${String(key)}` };
    applyDecorators(EventPattern(pattern, JETSTREAM, { [EXTRAS_KEY]: options }), UseFilters(new PassErrorToJetStream()))(target, key, descriptor);
  };
}

/** The declaration of a handler bound by the strategy, or undefined when it was not made by JetStreamHandler. */
export function jetStreamHandlerOptions(extras: Record<string, unknown> | undefined): JetStreamHandlerOptions<TSchema, unknown[]> | undefined {
  return extras?.[EXTRAS_KEY] as JetStreamHandlerOptions<TSchema, unknown[]> | undefined;
}
