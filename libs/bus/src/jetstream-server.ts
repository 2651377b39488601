import type { InjectionToken } from "@nestjs/common";
import { BaseRpcContext, type CustomTransportStrategy, type MessageHandler, Server } from "@nestjs/microservices";
import { isObservable, lastValueFrom } from "rxjs";
import type { TSchema } from "typebox";
import type { Bus } from "./bus.js";
import type { ConsumeOptions, Consumption, Delivery } from "./consume-types.js";
import { JETSTREAM, jetStreamHandlerOptions } from "./jetstream-handler.js";

/** What a JetStream handler gets besides its Delivery: which consumer brought it (`<stream>/<durable>`). */
export class JetStreamContext extends BaseRpcContext<[consumer: string]> {
  getConsumer(): string {
    return this.args[0];
  }
}

/**
 * Implemented by a provider or controller that must stop taking work before the app's consumers
 * stop. Nest closes a microservice's transport before any shutdown hook runs (onModuleDestroy,
 * beforeApplicationShutdown too), so a service that stops its platform's receiving there would
 * stop drawing first, and what it still had in hand would be answered undrawn; the runner would
 * take channels from a discovery in flight. The transport calls this first, once, when it closes.
 */
export interface BeforeJetStreamDrain {
  beforeJetStreamDrain(): Promise<void> | void;
}

function hasDrainHook(instance: unknown): instance is BeforeJetStreamDrain {
  return typeof (instance as Partial<BeforeJetStreamDrain> | null)?.beforeJetStreamDrain === "function";
}

/** What the transport needs of its app. */
export interface JetStreamServerHost {
  /** Resolves a handler's `inject` tokens. */
  resolve(token: InjectionToken): unknown;
  /** The app's providers and controllers, for their BeforeJetStreamDrain hooks. */
  instances(): Iterable<unknown>;
}

/**
 * The Nest transport of every mom service: each @JetStreamHandler becomes one durable pull
 * consumer of `Bus.consume`, so validation, dead letters, ack/nak with backoff, keep-alive while a
 * handler runs and recovery after a NATS restart are the bus's, not repeated here. `listen` binds
 * every consumer (all or none); `close` runs the BeforeJetStreamDrain hooks, then stops pulling
 * and waits for the handlers in flight.
 */
export class JetStreamServer extends Server implements CustomTransportStrategy {
  override transportId = JETSTREAM;
  // The bus settles each message by the handler's outcome, so a failure must come back to it.
  override readonly propagatesEventHandlerErrors = true;
  private readonly consumptions: Consumption[] = [];
  private closing?: Promise<void>;
  /**
   * "new" counts from here, before the app's bootstrap hooks: a service that opens its platform
   * in a hook may publish (and be answered) before `listen` creates the durable, and a durable
   * made "new" then would skip those answers the first time it is created.
   */
  private readonly startedAt = new Date();

  constructor(
    private readonly bus: Bus,
    private readonly host: JetStreamServerHost,
  ) {
    super();
  }

  async listen(callback: (err?: unknown) => void): Promise<void> {
    try {
      for (const [pattern, handler] of this.messageHandlers) {
        this.consumptions.push(await this.bus.consume(this.consumeOptions(pattern, handler)));
      }
    } catch (err) {
      await this.stopConsuming();
      return callback(err);
    }
    callback();
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      const hooked = new Set([...this.host.instances()].filter(hasDrainHook));
      await Promise.all([...hooked].map((i) => i.beforeJetStreamDrain()));
      await this.stopConsuming();
    })();
    return this.closing;
  }

  private async stopConsuming(): Promise<void> {
    await Promise.all(this.consumptions.splice(0).map((c) => c.stop()));
  }

  on(): never {
    throw new Error("the JetStream transport has no events of its own: watch bus.status()");
  }

  unwrap<T>(): T {
    return this.bus as T;
  }

  private consumeOptions(pattern: string, handler: MessageHandler): ConsumeOptions<TSchema> {
    const declared = jetStreamHandlerOptions(handler.extras);
    if (!declared || !handler.isEventHandler) throw new Error(`handler ${pattern} is not a JetStream handler: declare it with @JetStreamHandler`);
    if (handler.next) throw new Error(`two handlers have the pattern ${pattern}: one consumer would feed both`);
    const consumer = declared.consumer(this.bus.subjects, ...(declared.inject ?? []).map((token) => this.host.resolve(token)));
    const name = `${this.bus.subjects.stream(consumer.stream)}/${consumer.durable}`;
    return {
      ...consumer,
      deliver: consumer.deliver === "new" ? { startTime: this.startedAt } : consumer.deliver,
      schema: declared.schema,
      handler: (d) => this.invoke(handler, d, name),
    };
  }

  /** Runs the handler through Nest (guards, interceptors, pipes) and returns once it is done, rejecting with its error. */
  private async invoke(handler: MessageHandler, d: Delivery<unknown>, consumer: string): Promise<void> {
    const result: unknown = await handler(d, new JetStreamContext([consumer]));
    if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
  }
}
