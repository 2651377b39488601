import "reflect-metadata";
import { type BusOptions, startJetStreamService } from "@mom/ingress-sdk";
import { TelegramIngressModule } from "./telegram-ingress.module.js";
import { TelegramIngressService } from "./telegram-ingress.service.js";
import type { TelegramIngressOptions } from "./telegram-options.js";

export interface RunningTelegramIngress {
  service: TelegramIngressService;
  close(): Promise<void>;
}

/** Connects to NATS and the Bot API (getMe) and starts long polling; resolves once both are up. */
export async function startTelegramIngress(opts: TelegramIngressOptions, bus: BusOptions): Promise<RunningTelegramIngress> {
  const app = await startJetStreamService(TelegramIngressModule.forRoot(opts, bus));
  return { service: app.get(TelegramIngressService), close: () => app.close() };
}
