import { Controller, Get, HttpCode, Inject, Post, Query, type RawBodyRequest, Req, Res } from "@nestjs/common";
import type { Request, Response } from "express";
import { WhatsAppIngressService } from "./whatsapp-ingress.service.js";
import { WEBHOOK_PATH, WHATSAPP_OPTIONS, type WhatsAppIngressOptions } from "./whatsapp-options.js";
import { validSignature } from "./whatsapp-webhook.js";

/** The one route Meta calls: GET to verify the URL, POST (signed) with changes. */
@Controller(WEBHOOK_PATH)
export class WhatsAppWebhookController {
  constructor(
    @Inject(WHATSAPP_OPTIONS) private readonly opts: WhatsAppIngressOptions,
    @Inject(WhatsAppIngressService) private readonly ingress: WhatsAppIngressService,
  ) {}

  /** Meta's handshake: echo `hub.challenge` when `hub.verify_token` is ours. */
  @Get()
  verify(@Query("hub.mode") mode: string, @Query("hub.verify_token") token: string, @Query("hub.challenge") challenge: string, @Res() res: Response): void {
    if (mode === "subscribe" && token === this.opts.verifyToken && challenge) {
      res.status(200).type("text/plain").send(challenge);
      return;
    }
    this.opts.logger.warn({ mode }, "webhook verification refused: wrong hub.verify_token (adapters.<name>.verifyToken)");
    res.status(403).type("text/plain").send("verification failed");
  }

  /** Changes are accepted once the signature checks out; handling goes on after the 200 (Meta wants an answer fast). */
  @Post()
  @HttpCode(200)
  receive(@Req() req: RawBodyRequest<Request>, @Res() res: Response): void {
    const raw = req.rawBody ?? Buffer.alloc(0);
    if (!validSignature(raw, req.header("x-hub-signature-256"), this.opts.appSecret)) {
      this.opts.logger.warn({ signed: req.header("x-hub-signature-256") !== undefined, ip: req.ip }, "webhook post refused: missing or bad X-Hub-Signature-256");
      res.status(401).type("text/plain").send("bad signature");
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString("utf8"));
    } catch (err) {
      this.opts.logger.warn({ err }, "signed webhook post is not JSON");
      res.status(400).type("text/plain").send("not JSON");
      return;
    }
    this.ingress.accept(body);
    res.status(200).type("text/plain").send("ok");
  }
}
