import "reflect-metadata";
import { type BusOptions, startJetStreamService } from "@mom/ingress-sdk";
import type { SlackIngressOptions } from "./slack-options.js";
import { SlackIngressModule } from "./slack-ingress.module.js";
import { SlackIngressService } from "./slack-ingress.service.js";

export interface RunningSlackIngress {
  service: SlackIngressService;
  close(): Promise<void>;
}

/** Starts the Slack ingress: connects NATS, learns the workspace, backfills, opens Socket Mode. */
export async function startSlackIngress(opts: SlackIngressOptions, bus: BusOptions): Promise<RunningSlackIngress> {
  const app = await startJetStreamService(SlackIngressModule.forRoot(opts, bus));
  return { service: app.get(SlackIngressService), close: () => app.close() };
}
