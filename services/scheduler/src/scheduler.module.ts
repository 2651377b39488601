import { type DynamicModule, Module } from "@nestjs/common";
import { type BusOptions } from "@mom/bus";
import { BusModule } from "@mom/bus/nest";
import { SCHEDULER_OPTIONS, type SchedulerOptions } from "./scheduler-options.js";
import { SchedulerService } from "./scheduler.service.js";

@Module({})
export class SchedulerModule {
  static forRoot(opts: SchedulerOptions, bus: BusOptions): DynamicModule {
    return {
      module: SchedulerModule,
      imports: [BusModule.forRoot(bus)],
      providers: [{ provide: SCHEDULER_OPTIONS, useValue: opts }, SchedulerService],
    };
  }
}
