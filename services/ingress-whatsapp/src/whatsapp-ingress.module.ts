import { type DynamicModule, Module } from "@nestjs/common";
import { BusModule, type BusOptions, OutboundController, outboundDrawing } from "@mom/ingress-sdk";
import { WhatsAppIngressService } from "./whatsapp-ingress.service.js";
import { WHATSAPP_OPTIONS, type WhatsAppIngressOptions } from "./whatsapp-options.js";
import { WhatsAppWebhookController } from "./whatsapp-webhook.controller.js";

@Module({})
export class WhatsAppIngressModule {
  static forRoot(opts: WhatsAppIngressOptions, bus: BusOptions): DynamicModule {
    return {
      module: WhatsAppIngressModule,
      imports: [BusModule.forRoot(bus)],
      controllers: [WhatsAppWebhookController, OutboundController],
      providers: [{ provide: WHATSAPP_OPTIONS, useValue: opts }, WhatsAppIngressService, outboundDrawing(WhatsAppIngressService)],
    };
  }
}
