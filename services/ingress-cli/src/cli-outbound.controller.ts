import { Controller, Inject } from "@nestjs/common";
import { type Delivery, escapeChannelToken, JetStreamHandler, OutboundEvent } from "@mom/ingress-sdk";
import { CliIngressService } from "./cli-ingress.service.js";
import { CLI_OPTIONS, type CliIngressOptions } from "./cli-options.js";

/**
 * The terminal's outbound events: its own chat's only, from a durable of its own, so two
 * terminals on one adapter (MOM_CLI_CHANNEL) each draw their chat. Starts at new events: a
 * restarted terminal does not redraw old runs.
 */
@Controller()
export class CliOutboundController {
  constructor(@Inject(CliIngressService) private readonly cli: CliIngressService) {}

  @JetStreamHandler({
    schema: OutboundEvent,
    inject: [CLI_OPTIONS],
    consumer: (subjects, o: CliIngressOptions) => ({
      stream: "OUT",
      durable: `ingress-${o.adapter}-${escapeChannelToken(o.channelId)}`,
      deliver: "new",
      filterSubject: subjects.channel("out", { adapter: o.adapter, channelId: o.channelId }),
      stage: `ingress-${o.adapter}`,
    }),
  })
  draw(d: Delivery<OutboundEvent>): Promise<void> {
    return this.cli.draw(d);
  }
}
