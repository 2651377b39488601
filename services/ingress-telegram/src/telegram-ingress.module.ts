import { type DynamicModule, Module } from "@nestjs/common";
import { BusModule, type BusOptions, OutboundController, outboundDrawing } from "@mom/ingress-sdk";
import { TelegramIngressService } from "./telegram-ingress.service.js";
import { TELEGRAM_OPTIONS, type TelegramIngressOptions } from "./telegram-options.js";

@Module({})
export class TelegramIngressModule {
  static forRoot(opts: TelegramIngressOptions, bus: BusOptions): DynamicModule {
    return {
      module: TelegramIngressModule,
      imports: [BusModule.forRoot(bus)],
      controllers: [OutboundController],
      providers: [{ provide: TELEGRAM_OPTIONS, useValue: opts }, TelegramIngressService, outboundDrawing(TelegramIngressService)],
    };
  }
}
