import type { Bus } from "@mom/bus";
import type { ChannelRef, OutboundEvent, OutboundEventBody } from "@mom/contracts";
import type { Logger } from "pino";

/**
 * Publishes one run's events on mom.out in order, numbered from 0. Publishing is chained so the
 * agent's synchronous event callbacks never wait on NATS, yet seq order is publish order.
 * Each event's Nats-Msg-Id is `<runId>:<seq>`.
 */
export class RunPublisher {
  private seq = 0;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly bus: Bus,
    private readonly ref: ChannelRef,
    readonly runId: string,
    private readonly log: Logger,
  ) {}

  emit(event: OutboundEventBody): void {
    const out: OutboundEvent = { runId: this.runId, seq: this.seq++, ts: new Date().toISOString(), event };
    const subject = this.bus.subjects.channel("out", this.ref);
    this.chain = this.chain.then(async () => {
      try {
        await this.bus.publish(subject, out, `${out.runId}:${out.seq}`);
      } catch (err) {
        this.log.error({ err, seq: out.seq, type: event.type }, "could not publish outbound event");
      }
    });
  }

  /** Resolves once everything emitted so far is on the bus. */
  flushed(): Promise<void> {
    return this.chain;
  }
}
