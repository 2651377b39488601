import { type Delivery } from "@mom/bus";
import { JetStreamHandler } from "@mom/bus/nest";
import { escapeChannelToken, OutboundEvent } from "@mom/contracts";
import { Controller, Inject, type Provider, type Type } from "@nestjs/common";
import { type Arrival, observeRendering } from "@mom/render";

/** An ingress as its outbound events see it: which adapter it serves and what draws an event. */
export interface OutboundDrawing {
  readonly adapter: string;
  /** Set when the ingress draws one channel of its adapter only (a terminal's conversation). */
  readonly channel?: string;
  /** Draws one event in its channel (a Presenter's `handle`); resolves false when the platform call failed. `arrival`: whether JetStream delivered it before. */
  draw(channelId: string, event: OutboundEvent, arrival?: Arrival): Promise<boolean | void>;
}

/** The provider of the ingress's OutboundDrawing (see `outboundDrawing`). */
export const OUTBOUND_DRAWING = Symbol("mom.outbound-drawing");

/**
 * Each channel's events must be drawn in order, also through a NATS failover. A pull request the
 * server keeps for a client that moved on (its server froze or died) swallows what is sent into it
 * until it expires; those events are redelivered only after their ack wait, and meanwhile newer
 * ones were drawn: answers showed up below later ones, half a minute late
 * (test/chaos/ingress-cluster-chaos.test.ts). So: pulls expire after 2 s (a stale one swallows for
 * at most that long), the ack wait is 5 s (30 s by default), and after a failed or cut pull the
 * consumer is not pulled again while the server counts deliveries this process never got, until
 * their ack wait is over and they come first (`keepOrderThroughLostPulls`). What comes twice (an
 * ack lost with its server) is dropped by the presenter.
 */
const KEEP_ORDER = { keepOrderThroughLostPulls: true, ackWaitMs: 5000, pullExpiresMs: 2000 } as const;

/**
 * An ingress's `mom.out.<adapter>.*` consumer: every event goes to its presenter. Channels draw
 * side by side; within a channel the presenter's queue keeps the order (handlers start in
 * delivery order). Starts at new events: a restarted ingress does not redraw old runs. An ingress
 * of one channel has a durable of its own over that channel (`ingress-<adapter>-<channel>`), so
 * several processes of one adapter (terminals) each get every event of their own conversation.
 */
@Controller()
export class OutboundController {
  constructor(@Inject(OUTBOUND_DRAWING) private readonly ingress: OutboundDrawing) {}

  @JetStreamHandler({
    schema: OutboundEvent,
    // The adapter's name is config.json's, known only when the ingress starts.
    inject: [OUTBOUND_DRAWING],
    consumer: (subjects, ingress: OutboundDrawing) =>
      ingress.channel === undefined
        ? {
            stream: "OUT",
            durable: `ingress-${ingress.adapter}`,
            deliver: "new",
            filterSubject: subjects.wildcard("out", ingress.adapter),
            stage: `ingress-${ingress.adapter}`,
            maxInFlight: 64,
            ...KEEP_ORDER,
          }
        : {
            // One conversation: strictly one event at a time, as the terminal always drew it.
            stream: "OUT",
            durable: `ingress-${ingress.adapter}-${escapeChannelToken(ingress.channel)}`,
            deliver: "new",
            filterSubject: subjects.channel("out", { adapter: ingress.adapter, channelId: ingress.channel }),
            stage: `ingress-${ingress.adapter}`,
            ...KEEP_ORDER,
          },
  })
  draw(d: Delivery<OutboundEvent>): Promise<void> {
    return observeRendering(this.ingress.adapter, d, () => this.ingress.draw(d.channel!.channelId, d.data, { redelivered: d.redelivered }));
  }
}

/**
 * What an ingress module adds to draw its outbound events, with `controllers: [OutboundController]`:
 * its service, which implements OutboundDrawing, as the drawing.
 */
export function outboundDrawing(service: Type<OutboundDrawing>): Provider {
  return { provide: OUTBOUND_DRAWING, useExisting: service };
}
