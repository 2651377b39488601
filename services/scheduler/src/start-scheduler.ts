import "reflect-metadata";
import { NestFactory } from "@nestjs/core";
import type { BusOptions } from "@mom/bus";
import type { EventScheduler } from "./event-scheduler.js";
import type { SchedulerOptions } from "./scheduler-options.js";
import { SchedulerModule } from "./scheduler.module.js";
import { SchedulerService } from "./scheduler.service.js";

export interface RunningScheduler {
  scheduler: EventScheduler;
  close(): Promise<void>;
}

/** Boots the scheduler as a Nest application context (no HTTP); events/ has been read when this resolves. */
export async function startScheduler(opts: SchedulerOptions, bus: BusOptions): Promise<RunningScheduler> {
  const app = await NestFactory.createApplicationContext(SchedulerModule.forRoot(opts, bus), { logger: false, abortOnError: false });
  await app.init();
  return { scheduler: app.get(SchedulerService).scheduler, close: () => app.close() };
}
