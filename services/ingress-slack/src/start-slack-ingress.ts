import "reflect-metadata";
import { NestFactory } from "@nestjs/core";
import type { BusOptions } from "@mom/ingress-sdk";
import type { SlackIngressOptions } from "./slack-options.js";
import { SlackIngressModule } from "./slack-ingress.module.js";
import { SlackIngressService } from "./slack-ingress.service.js";

export interface RunningSlackIngress {
  service: SlackIngressService;
  close(): Promise<void>;
}

/** Starts the Slack ingress: connects NATS, learns the workspace, backfills, opens Socket Mode. */
export async function startSlackIngress(opts: SlackIngressOptions, bus: BusOptions): Promise<RunningSlackIngress> {
  const app = await NestFactory.createApplicationContext(SlackIngressModule.forRoot(opts, bus), { logger: false, abortOnError: false });
  try {
    await app.init();
  } catch (err) {
    await app.close().catch(() => {});
    throw err;
  }
  return { service: app.get(SlackIngressService), close: () => app.close() };
}
