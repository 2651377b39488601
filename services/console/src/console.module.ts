import { type DynamicModule, Module } from "@nestjs/common";
import { Bus } from "@mom/bus";
import { CONSOLE_OPTIONS, type ConsoleOptions } from "./console-options.js";
import { ConsoleController } from "./console.controller.js";
import { ConsoleService } from "./console.service.js";

@Module({})
export class ConsoleModule {
  static forRoot(opts: ConsoleOptions): DynamicModule {
    return {
      module: ConsoleModule,
      controllers: [ConsoleController],
      providers: [{ provide: CONSOLE_OPTIONS, useValue: opts }, { provide: Bus, useValue: opts.bus }, ConsoleService],
    };
  }
}
