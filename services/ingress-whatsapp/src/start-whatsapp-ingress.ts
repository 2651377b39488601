import "reflect-metadata";
import { NestFactory } from "@nestjs/core";
import type { NestExpressApplication } from "@nestjs/platform-express";
import { Bus, type BusOptions, connectJetStream, serviceReadiness } from "@mom/ingress-sdk";
import type { AddressInfo } from "node:net";
import { WhatsAppIngressModule } from "./whatsapp-ingress.module.js";
import { WhatsAppIngressService } from "./whatsapp-ingress.service.js";
import type { WhatsAppIngressOptions } from "./whatsapp-options.js";

export interface RunningWhatsAppIngress {
  service: WhatsAppIngressService;
  /** The port the webhook server listens on. */
  port: number;
  close(): Promise<void>;
}

/** Connects to NATS and opens the webhook HTTP server; resolves once both are up. */
export async function startWhatsAppIngress(opts: WhatsAppIngressOptions, bus: BusOptions): Promise<RunningWhatsAppIngress> {
  // rawBody: the signature is over the bytes Meta sent, not a re-serialisation.
  const app = await NestFactory.create<NestExpressApplication>(WhatsAppIngressModule.forRoot(opts, bus), { logger: false, abortOnError: false, rawBody: true });
  connectJetStream(app);
  try {
    // Outbound events are drawn before Meta can post the first message.
    await app.startAllMicroservices();
    await app.listen(opts.webhookPort ?? 8080, opts.webhookHost ?? "0.0.0.0");
  } catch (err) {
    await app.close().catch(() => {});
    throw err;
  }
  const port = (app.getHttpServer().address() as AddressInfo).port;
  opts.logger.info({ adapter: opts.adapter, port }, "whatsapp ingress: webhook listening");
  // WhatsApp has no connection to hold: the ingress is ready while Meta can post to its webhook.
  const unready = serviceReadiness(`ingress-${opts.adapter}`, app.get(Bus), () => (app.getHttpServer().listening ? undefined : "webhook server not listening"));
  return {
    service: app.get(WhatsAppIngressService),
    port,
    close: () => {
      unready();
      return app.close();
    },
  };
}
