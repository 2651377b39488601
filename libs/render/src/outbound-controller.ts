import { type Delivery, JetStreamHandler } from "@mom/bus";
import { OutboundEvent } from "@mom/contracts";
import { Controller, Inject, type Provider, type Type } from "@nestjs/common";
import { observeRendering } from "./presenter.js";

/** An ingress as its outbound events see it: which adapter it serves and what draws an event. */
export interface OutboundDrawing {
  readonly adapter: string;
  /** Draws one event in its channel (a Presenter's `handle`); resolves false when the platform call failed. */
  draw(channelId: string, event: OutboundEvent): Promise<boolean | void>;
}

/** The provider of the ingress's OutboundDrawing (see `outboundDrawing`). */
export const OUTBOUND_DRAWING = Symbol("mom.outbound-drawing");

/**
 * An ingress's `mom.out.<adapter>.*` consumer: every event goes to its presenter. Channels draw
 * side by side; within a channel the presenter's queue keeps the order (handlers start in
 * delivery order). Starts at new events: a restarted ingress does not redraw old runs.
 */
@Controller()
export class OutboundController {
  constructor(@Inject(OUTBOUND_DRAWING) private readonly ingress: OutboundDrawing) {}

  @JetStreamHandler({
    schema: OutboundEvent,
    // The adapter's name is config.json's, known only when the ingress starts.
    inject: [OUTBOUND_DRAWING],
    consumer: (subjects, ingress: OutboundDrawing) => ({
      stream: "OUT",
      durable: `ingress-${ingress.adapter}`,
      deliver: "new",
      filterSubject: subjects.wildcard("out", ingress.adapter),
      stage: `ingress-${ingress.adapter}`,
      maxInFlight: 64,
    }),
  })
  draw(d: Delivery<OutboundEvent>): Promise<void> {
    return observeRendering(this.ingress.adapter, d, () => this.ingress.draw(d.channel!.channelId, d.data));
  }
}

/**
 * What an ingress module adds to draw its outbound events, with `controllers: [OutboundController]`:
 * its service, which implements OutboundDrawing, as the drawing.
 */
export function outboundDrawing(service: Type<OutboundDrawing>): Provider {
  return { provide: OUTBOUND_DRAWING, useExisting: service };
}
