import "reflect-metadata";
import { NestFactory } from "@nestjs/core";
import type { BusOptions } from "@mom/ingress-sdk";
import type { DiscordIngressOptions } from "./discord-options.js";
import { DiscordIngressModule } from "./discord-ingress.module.js";
import { DiscordIngressService } from "./discord-ingress.service.js";

export interface RunningDiscordIngress {
  service: DiscordIngressService;
  close(): Promise<void>;
}

/** Connects to NATS and the Discord gateway; resolves once both are ready. */
export async function startDiscordIngress(opts: DiscordIngressOptions, bus: BusOptions): Promise<RunningDiscordIngress> {
  const app = await NestFactory.createApplicationContext(DiscordIngressModule.forRoot(opts, bus), { logger: false, abortOnError: false });
  try {
    await app.init();
  } catch (err) {
    await app.close().catch(() => {});
    throw err;
  }
  return { service: app.get(DiscordIngressService), close: () => app.close() };
}
