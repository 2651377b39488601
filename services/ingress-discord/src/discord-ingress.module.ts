import { type DynamicModule, Module } from "@nestjs/common";
import { BusModule, type BusOptions, OutboundController, outboundDrawing } from "@mom/ingress-sdk";
import { DISCORD_OPTIONS, type DiscordIngressOptions } from "./discord-options.js";
import { DiscordIngressService } from "./discord-ingress.service.js";

@Module({})
export class DiscordIngressModule {
  static forRoot(opts: DiscordIngressOptions, bus: BusOptions): DynamicModule {
    return {
      module: DiscordIngressModule,
      imports: [BusModule.forRoot(bus)],
      controllers: [OutboundController],
      providers: [{ provide: DISCORD_OPTIONS, useValue: opts }, DiscordIngressService, outboundDrawing(DiscordIngressService)],
    };
  }
}
