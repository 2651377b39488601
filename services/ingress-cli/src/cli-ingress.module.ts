import { type DynamicModule, Module } from "@nestjs/common";
import { BusModule, type BusOptions } from "@mom/ingress-sdk";
import { CLI_OPTIONS, type CliIngressOptions } from "./cli-options.js";
import { CliIngressService } from "./cli-ingress.service.js";
import { CliOutboundController } from "./cli-outbound.controller.js";

@Module({})
export class CliIngressModule {
  static forRoot(opts: CliIngressOptions, bus: BusOptions): DynamicModule {
    return {
      module: CliIngressModule,
      imports: [BusModule.forRoot(bus)],
      controllers: [CliOutboundController],
      providers: [{ provide: CLI_OPTIONS, useValue: opts }, CliIngressService],
    };
  }
}
