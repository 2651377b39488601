import { type DynamicModule, Module } from "@nestjs/common";
import { type BusOptions } from "@mom/bus";
import { BusModule } from "@mom/bus/nest";
import { RUNNER_OPTIONS, type RunnerOptions } from "./runner-options.js";
import { RunnerService } from "./runner.service.js";
import { DiscoveryController } from "./discovery.controller.js";

@Module({})
export class RunnerModule {
  static forRoot(opts: RunnerOptions, bus: BusOptions): DynamicModule {
    return {
      module: RunnerModule,
      imports: [BusModule.forRoot(bus)],
      controllers: [DiscoveryController],
      providers: [{ provide: RUNNER_OPTIONS, useValue: opts }, RunnerService],
    };
  }
}
