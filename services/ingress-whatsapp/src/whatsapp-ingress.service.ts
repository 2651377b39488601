import { Inject, Injectable, type OnApplicationShutdown } from "@nestjs/common";
import { type BeforeJetStreamDrain, Bus, type OutboundDrawing, type OutboundEvent } from "@mom/ingress-sdk";
import {
  busReceipts,
  DeliveryReceipts,
  DEFAULT_MAX_ATTACHMENT_BYTES,
  DM_REFUSAL,
  decideApproval,
  importAttachment,
  InboundIntake,
  MessageLayout,
  type MessageRun,
  mayDirectMessage,
  Presenter,
  publishInbound,
} from "@mom/ingress-sdk";
import { metrics } from "@mom/ingress-sdk";
import type { Logger } from "pino";
import { GraphApi, WINDOW_CLOSED } from "./graph-api.js";
import { DEFAULT_GRAPH_VERSION, WHATSAPP_OPTIONS, type WhatsAppIngressOptions } from "./whatsapp-options.js";
import { parseApprovalButton, WhatsAppSurface, WindowClosedError } from "./whatsapp-surface.js";
import { failedDeliveries, toWhatsAppInbound, type WebhookMessage, webhookMessages } from "./whatsapp-webhook.js";

/**
 * One WhatsApp business number: signed webhook posts become ChannelMessages on
 * `mom.in.<adapter>.<wa_id>` (in order per person), and `mom.out.<adapter>.*` is drawn back with
 * the shared presenter over the Cloud API (see docs/whatsapp.md).
 */
@Injectable()
export class WhatsAppIngressService implements BeforeJetStreamDrain, OnApplicationShutdown, OutboundDrawing {
  private readonly log: Logger;
  private readonly api: GraphApi;
  private readonly surface: WhatsAppSurface;
  private readonly presenter: Presenter<MessageRun, string>;
  private readonly deliveries: DeliveryReceipts;
  private readonly inbound: InboundIntake;

  constructor(
    @Inject(Bus) private readonly bus: Bus,
    @Inject(WHATSAPP_OPTIONS) private readonly opts: WhatsAppIngressOptions,
  ) {
    this.log = opts.logger;
    this.inbound = new InboundIntake("WhatsApp", this.log);
    this.api = new GraphApi({
      root: opts.apiUrl ?? "https://graph.facebook.com",
      version: opts.graphVersion ?? DEFAULT_GRAPH_VERSION,
      token: opts.accessToken,
      phoneNumberId: opts.phoneNumberId,
      log: this.log,
      retryForMs: opts.rateLimitRetryMs ?? 120_000,
      onRateLimited: () => metrics.platformRateLimits.inc({ adapter: opts.adapter }),
    });
    this.surface = new WhatsAppSurface(this.api, this.log);
    // No edits on WhatsApp: nothing is redrawn, so the interval only paces typing renewals.
    this.deliveries = new DeliveryReceipts(opts.adapter, busReceipts(bus, opts.adapter), this.log);
    this.presenter = new Presenter(new MessageLayout(this.surface), { files: bus, maxBytes: this.maxBytes, log: this.log, editIntervalMs: 1000, typingIntervalMs: 20_000, deliveries: this.deliveries });
  }

  /** The adapter this ingress serves (its name in config.json). */
  get adapter(): string {
    return this.opts.adapter;
  }

  private get maxBytes(): number {
    return this.opts.maxAttachmentBytes ?? DEFAULT_MAX_ATTACHMENT_BYTES;
  }

  /** The webhook server is closed by then: what it took in is published before the outbound consumer stops. */
  async beforeJetStreamDrain(): Promise<void> {
    await this.inbound.idle();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.presenter.close();
  }

  /** One of this adapter's outbound events (OutboundController brings them once the service listens). */
  draw(channelId: string, event: OutboundEvent): Promise<boolean> {
    return this.presenter.handle(channelId, event);
  }

  /** A verified webhook body: each message is queued behind the earlier ones of its sender. */
  accept(body: unknown): void {
    for (const f of failedDeliveries(body)) {
      const why = f.errors.some((e) => e.code === WINDOW_CLOSED)
        ? new WindowClosedError(f.recipient).message
        : `WhatsApp could not deliver a message to ${f.recipient}: ${f.errors.map((e) => `${e.code ?? "?"} ${e.title ?? e.message ?? ""}`.trim()).join("; ") || "no reason given"}`;
      this.log.error({ messageId: f.messageId, to: f.recipient, errors: f.errors }, why);
      void this.deliveries.failedLater(f.messageId, why);
    }
    for (const w of webhookMessages(body)) {
      if (w.phoneNumberId && w.phoneNumberId !== this.opts.phoneNumberId) continue;
      this.surface.wrote(w.message.from, Number(w.message.timestamp) * 1000 || Date.now());
      this.inbound.take(w.message.from, w.message.id, () => this.handle(w));
    }
  }

  private async handle(w: WebhookMessage): Promise<void> {
    await this.api.markRead(w.message.id, false).catch((err: unknown) => this.log.warn({ err }, "could not send the read receipt"));
    const button = w.message.interactive?.button_reply;
    if (button) return this.onButton(w, button.id);
    const m = toWhatsAppInbound(w);
    if (!m) return void this.log.debug({ type: w.message.type }, "message kind mom does not read");
    if (!mayDirectMessage(m.sender.id, this.opts)) {
      this.log.info({ from: m.sender.id }, "message refused (dm policy)");
      await this.surface.post(m.channelId, DM_REFUSAL, { replyTo: m.id }).catch((err: unknown) => this.log.warn({ err }, "could not send the refusal"));
      return;
    }
    // Delivered after the window it opened had closed (a webhook re-sent long after an outage): an
    // answer could not be sent, so it is kept in the channel's history but does not start a run.
    const closed = this.surface.windowClosed(m.channelId);
    if (closed) this.log.warn({ from: m.sender.id, id: m.id, sentAt: m.timestamp }, `a message arrived after its 24-hour window closed; recorded, not answered: ${closed.message}`);
    const { media, ...rest } = closed ? { ...m, isMention: false } : m;
    const ref = { adapter: this.opts.adapter, channelId: m.channelId };
    const attachments = media ? [await importAttachment({ filename: media.filename, ...(media.mimeType && { mimeType: media.mimeType }), download: (max) => this.api.download(media.mediaId, max) }, ref, { files: this.bus, maxBytes: this.maxBytes })] : [];
    await publishInbound(this.bus, this.opts.adapter, { ...rest, attachments }, { log: this.log });
  }

  /** A reply button of an approval prompt; someone who may not decide is told so in the chat. */
  private async onButton(w: WebhookMessage, id: string): Promise<void> {
    const parsed = parseApprovalButton(id);
    if (!parsed) return;
    const from = w.message.from;
    const username = w.contact.profile?.name?.replace(/\s+/g, "_") || from;
    const { refusal } = await decideApproval(
      { bus: this.bus, adapter: this.opts.adapter, dialect: this.presenter.dialect, log: this.log },
      this.presenter.approval(parsed.approvalId),
      { ...parsed, user: { id: from, username }, channel: from },
    );
    if (refusal) await this.surface.post(from, refusal, { replyTo: w.message.id }).catch((err: unknown) => this.log.warn({ err }, "could not tell a non-approver"));
  }
}
