import "reflect-metadata";
import { NestFactory } from "@nestjs/core";
import type { BusOptions } from "@mom/ingress-sdk";
import type { CliIngressOptions } from "./cli-options.js";
import { CliIngressModule } from "./cli-ingress.module.js";
import { CliIngressService } from "./cli-ingress.service.js";

export interface RunningCliIngress {
  service: CliIngressService;
  close(): Promise<void>;
}

export async function startCliIngress(opts: CliIngressOptions, bus: BusOptions): Promise<RunningCliIngress> {
  const app = await NestFactory.createApplicationContext(CliIngressModule.forRoot(opts, bus), { logger: false, abortOnError: false });
  await app.init();
  return { service: app.get(CliIngressService), close: () => app.close() };
}
