import "reflect-metadata";
import { type BusOptions, startJetStreamService } from "@mom/ingress-sdk";
import type { CliIngressOptions } from "./cli-options.js";
import { CliIngressModule } from "./cli-ingress.module.js";
import { CliIngressService } from "./cli-ingress.service.js";

export interface RunningCliIngress {
  service: CliIngressService;
  close(): Promise<void>;
}

export async function startCliIngress(opts: CliIngressOptions, bus: BusOptions): Promise<RunningCliIngress> {
  const app = await startJetStreamService(CliIngressModule.forRoot(opts, bus));
  return { service: app.get(CliIngressService), close: () => app.close() };
}
