import { type Subjects, validator } from "@mom/contracts";
import {
  type Consumer,
  type ConsumerMessages,
  type JetStreamClient,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  type JsMsg,
  type StreamInfo,
} from "@nats-io/jetstream";
import type { NatsConnection, QueuedIterator, Status } from "@nats-io/nats-core";
import type { Logger } from "pino";
import type { TSchema } from "typebox";
import type { ConsumeOptions, Consumption } from "./consume-types.js";
import type { DeadLetterInput } from "./dead-letter.js";
import { withNextWrite } from "./coalesce-writes.js";
import { type DurableSpec, ensureDurable } from "./durable.js";
import { type ProcessContext, processMessage } from "./process-message.js";

export interface ConsumptionDeps {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  subjects: Subjects;
  logger: Logger;
  drainTimeoutMs: number;
  deadLetter(stage: string, input: DeadLetterInput, dedupeId: string): Promise<void>;
  /** Re-creates the streams when one vanished (e.g. a NATS server that lost its store). */
  provision(): Promise<void>;
  onStopped(c: Consumption): void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

function isStreamNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound;
}

/**
 * One durable pull consumer served by a fetch loop. The bus never holds more messages than it has
 * free handler slots: each pull asks for exactly the free slots, so a message is never parked in a
 * client buffer while its ack timer runs. Every message the bus holds gets working() every
 * ackWait/3 until it is settled. Pull failures (server restart, deleted consumer, missing stream)
 * are retried with backoff; the durable is re-created from the last seen sequence when it vanished.
 */
export class PullConsumption<S extends TSchema> implements Consumption {
  private readonly inflight = new Set<Promise<void>>();
  private readonly log: Logger;
  private readonly spec: DurableSpec;
  private readonly ctx: ProcessContext<S>;
  private readonly maxInFlight: number;
  private readonly expiresMs: number;
  private consumer?: Consumer;
  private batch?: ConsumerMessages;
  private statusIter?: AsyncIterable<Status>;
  private loop?: Promise<void>;
  private stopping = false;
  private stopPromise?: Promise<void>;
  private wakeUp: () => void = () => {};
  private wake = this.newWake();
  private lastSeq = 0;
  private streamCreated?: string;
  /** Messages pulled and not yet settled (running, or waiting for a slot). */
  private held = 0;
  /**
   * A pull failed or was cut (or this process just started): the server may count deliveries this
   * process never got. Only looked at with `keepOrderThroughLostPulls`.
   */
  private mayHaveLost = true;
  /** When the last pull was asked for: until it expires the server may still send into it. */
  private lastPullAt = 0;

  constructor(
    private readonly deps: ConsumptionDeps,
    private readonly opts: ConsumeOptions<S>,
  ) {
    const ackWaitMs = opts.ackWaitMs ?? 30_000;
    if (!(ackWaitMs >= 300)) throw new Error(`ackWaitMs must be >= 300 (got ${opts.ackWaitMs})`);
    this.maxInFlight = opts.maxInFlight ?? 1;
    if (!Number.isInteger(this.maxInFlight) || this.maxInFlight < 1) throw new Error(`maxInFlight must be a positive integer (got ${opts.maxInFlight})`);
    this.expiresMs = Math.max(1000, opts.pullExpiresMs ?? 30_000);
    deps.subjects.dlq(opts.stage); // validates the stage name up front
    this.spec = {
      stream: deps.subjects.stream(opts.stream),
      durable: opts.durable,
      filterSubject: opts.filterSubject,
      deliver: opts.deliver ?? "all",
      ackWaitMs,
      maxDeliver: opts.maxDeliver ?? 5,
    };
    this.log = deps.logger.child({ stage: opts.stage, stream: this.spec.stream, durable: opts.durable });
    this.ctx = {
      stream: this.spec.stream,
      durable: opts.durable,
      validator: validator(opts.schema),
      handler: opts.handler,
      maxDeliver: this.spec.maxDeliver,
      subjects: deps.subjects,
      logger: this.log,
      deadLetter: (input, dedupeId) => deps.deadLetter(opts.stage, input, dedupeId),
      ack: opts.ackWithNextWrite ? (msg) => withNextWrite(deps.nc, () => msg.ack()) : (msg) => msg.ack(),
    };
  }

  /** The durable exists and is being pulled from (false while a pull failure is being retried). */
  get bound(): boolean {
    return this.consumer !== undefined && !this.stopping;
  }

  get name(): string {
    return `${this.spec.stream}/${this.spec.durable}`;
  }

  /** Creates/updates the durable (errors surface to the caller), then starts pulling in the background. */
  async start(): Promise<void> {
    try {
      this.consumer = await this.prepare(false);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new Error(`cannot consume ${this.spec.stream}/${this.spec.durable}: ${reason}`, { cause: err });
    }
    this.loop = this.run();
    void this.watchReconnects();
    this.log.info({ filterSubject: this.spec.filterSubject, maxInFlight: this.maxInFlight }, "consuming");
  }

  stop(timeoutMs = this.deps.drainTimeoutMs): Promise<void> {
    this.stopPromise ??= (async () => {
      this.stopping = true;
      this.batch?.stop();
      (this.statusIter as QueuedIterator<Status> | undefined)?.stop();
      this.wakeUp();
      const settled = Promise.all([this.loop, ...this.inflight]).then(() => true);
      const timer = sleep(timeoutMs).then(() => false);
      if (!(await Promise.race([settled, timer]))) {
        this.log.warn({ inFlight: this.inflight.size, timeoutMs }, "stopped waiting for in-flight handlers");
      }
      this.deps.onStopped(this);
      this.log.info("consumption stopped");
    })();
    return this.stopPromise;
  }

  private newWake(): Promise<void> {
    return new Promise<void>((r) => (this.wakeUp = r));
  }

  private async waitForSlot(): Promise<void> {
    while (!this.stopping && this.inflight.size >= this.maxInFlight) {
      await this.wake;
    }
  }

  private async prepare(recovering: boolean): Promise<Consumer> {
    const { jsm } = this.deps;
    let stream: StreamInfo;
    try {
      stream = await jsm.streams.info(this.spec.stream);
    } catch (err) {
      if (!isStreamNotFound(err)) throw err;
      if (!recovering) throw new Error(`stream ${this.spec.stream} not found: call bus.provision() first`, { cause: err });
      this.log.warn("stream vanished; provisioning the streams again");
      await this.deps.provision();
      stream = await jsm.streams.info(this.spec.stream);
    }
    if (this.streamCreated !== undefined && stream.created !== this.streamCreated) {
      this.log.warn("stream was re-created; sequences start over");
      this.lastSeq = 0;
    }
    this.streamCreated = stream.created;
    // A durable that vanished under a live stream resumes after the last message this process saw.
    const startSeq = recovering && this.lastSeq > 0 ? this.lastSeq + 1 : undefined;
    await ensureDurable(jsm, { ...this.spec, startSeq }, this.log);
    return this.deps.js.consumers.get(this.spec.stream, this.spec.durable);
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      try {
        await this.waitForSlot();
        if (this.stopping) break;
        this.consumer ??= await this.prepare(true);
        if (this.opts.keepOrderThroughLostPulls && this.mayHaveLost) {
          await this.awaitLostDeliveries();
          if (this.stopping) break;
        }
        this.lastPullAt = Date.now();
        const batch = await this.consumer.fetch({ max_messages: this.maxInFlight - this.inflight.size, expires: this.expiresMs });
        this.batch = batch;
        if (this.stopping) batch.stop();
        for await (const msg of batch) await this.accept(msg);
        failures = 0;
      } catch (err) {
        if (this.stopping || this.deps.nc.isClosed()) break;
        failures++;
        this.consumer = undefined;
        this.mayHaveLost = true;
        const retryInMs = Math.min(200 * 2 ** (failures - 1), 5000);
        this.log.warn({ err, retryInMs, failures }, "pulling messages failed; retrying");
        await Promise.race([sleep(retryInMs), this.wake]);
      } finally {
        this.batch = undefined;
      }
      if (this.deps.nc.isClosed()) break;
    }
  }

  /**
   * After a lost pull: waits while the server counts deliveries pending that this process does not
   * hold, until their ack wait has run out (they are redelivered before anything newer). Without
   * this, a pull lost in a failover left its messages pending for the whole ack wait while newer
   * ones were drawn: an ingress showed one answer below a dozen later ones of its chat, half a
   * minute late (test/chaos/ingress-cluster-chaos.test.ts).
   */
  private async awaitLostDeliveries(): Promise<void> {
    // Cleared first: a reconnect while this waits sets it again.
    this.mayHaveLost = false;
    // The last pull, lost or not, may still take messages on the server until it expires: only
    // then is what the server counts pending final.
    while (!this.stopping && Date.now() < this.lastPullAt + this.expiresMs) await sleep(Math.min(100, this.lastPullAt + this.expiresMs - Date.now()));
    const info = await this.deps.jsm.consumers.info(this.spec.stream, this.spec.durable).catch(() => undefined);
    // An answer with nothing missing, or a consumer created just now: pull at once.
    if (info && info.num_ack_pending <= this.held) return;
    // The server redelivers once the ack wait of what it sent has run out, which began before the
    // pull was lost: one ack wait from now covers it, plus a moment for its expiry timer.
    const waitMs = this.spec.ackWaitMs + 500;
    this.log.warn(
      { pending: info?.num_ack_pending, held: this.held, waitMs },
      "deliveries this process never got (a pull lost with a server, or a process that died holding them) are pending: pulling again once they are redelivered, so they come before anything newer",
    );
    const until = Date.now() + waitMs;
    while (!this.stopping && Date.now() < until) await sleep(Math.min(100, until - Date.now()));
  }

  /** Takes a pulled message: keeps it alive, waits for a free slot, runs it (or returns it when stopping). */
  private async accept(msg: JsMsg): Promise<void> {
    this.lastSeq = Math.max(this.lastSeq, msg.seq);
    this.held++;
    const keepAlive = setInterval(() => {
      try {
        msg.working();
      } catch {
        // connection closed: the server redelivers after ack wait
      }
    }, Math.floor(this.spec.ackWaitMs / 3));
    keepAlive.unref();
    await this.waitForSlot();
    if (this.stopping) {
      clearInterval(keepAlive);
      this.held--;
      try {
        msg.nak();
      } catch {
        // redelivered after ack wait
      }
      return;
    }
    const job = processMessage(this.ctx, msg).finally(() => {
      clearInterval(keepAlive);
      this.held--;
      this.inflight.delete(job);
      const wake = this.wakeUp;
      this.wake = this.newWake();
      wake();
    });
    this.inflight.add(job);
  }

  /** After a reconnect the old pull request is gone with the old connection: pull afresh at once. */
  private async watchReconnects(): Promise<void> {
    const iter = this.deps.nc.status();
    this.statusIter = iter;
    try {
      for await (const s of iter) {
        if (this.stopping) break;
        if (s.type === "reconnect") {
          this.mayHaveLost = true;
          this.batch?.stop();
        }
      }
    } catch {
      // connection closed
    }
  }
}
