import { type DynamicModule, Module } from "@nestjs/common";
import { BusModule, type BusOptions, OutboundController, outboundDrawing } from "@mom/ingress-sdk";
import { SLACK_OPTIONS, type SlackIngressOptions } from "./slack-options.js";
import { SlackIngressService } from "./slack-ingress.service.js";

@Module({})
export class SlackIngressModule {
  static forRoot(opts: SlackIngressOptions, bus: BusOptions): DynamicModule {
    return {
      module: SlackIngressModule,
      imports: [BusModule.forRoot(bus)],
      controllers: [OutboundController],
      providers: [{ provide: SLACK_OPTIONS, useValue: opts }, SlackIngressService, outboundDrawing(SlackIngressService)],
    };
  }
}
