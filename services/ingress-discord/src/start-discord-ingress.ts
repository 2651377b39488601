import "reflect-metadata";
import { type BusOptions, startJetStreamService } from "@mom/ingress-sdk";
import type { DiscordIngressOptions } from "./discord-options.js";
import { DiscordIngressModule } from "./discord-ingress.module.js";
import { DiscordIngressService } from "./discord-ingress.service.js";

export interface RunningDiscordIngress {
  service: DiscordIngressService;
  close(): Promise<void>;
}

/** Connects to NATS and the Discord gateway; resolves once both are ready. */
export async function startDiscordIngress(opts: DiscordIngressOptions, bus: BusOptions): Promise<RunningDiscordIngress> {
  const app = await startJetStreamService(DiscordIngressModule.forRoot(opts, bus));
  return { service: app.get(DiscordIngressService), close: () => app.close() };
}
