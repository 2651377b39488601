import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from "@nestjs/common";
import { type BeforeJetStreamDrain, Bus, type OutboundDrawing, type OutboundEvent, serviceReadiness } from "@mom/ingress-sdk";
import { metrics } from "@mom/ingress-sdk";
import {
  busReceipts,
  DeliveryReceipts,
  InboundIntake,
  DEFAULT_MAX_ATTACHMENT_BYTES,
  DM_REFUSAL,
  decideApproval,
  importAttachment,
  MessageLayout,
  type MessageRun,
  mayDirectMessage,
  Presenter,
  publishInbound,
  readDownload,
} from "@mom/ingress-sdk";
import { autoRetry } from "@grammyjs/auto-retry";
import { Bot, type Context, GrammyError } from "grammy";
import type { Message } from "grammy/types";
import type { Logger } from "pino";
import { type BotIdentity, senderOf, type TelegramFile, toTelegramInbound } from "./telegram-inbound.js";
import { TELEGRAM_OPTIONS, type TelegramIngressOptions } from "./telegram-options.js";
import { parseApprovalButton, TelegramSurface } from "./telegram-surface.js";
import { getUpdatesHealth, startPolling, startWebhook, type UpdateSource } from "./telegram-updates.js";

/**
 * One Telegram bot: updates (getUpdates long polling, or a webhook) become ChannelMessages on
 * `mom.in.<adapter>.<chat id>` (in order per chat), and `mom.out.<adapter>.*` is drawn back with
 * the shared presenter over the Bot API (see docs/telegram.md).
 */
@Injectable()
export class TelegramIngressService implements OnApplicationBootstrap, BeforeJetStreamDrain, OnApplicationShutdown, OutboundDrawing {
  readonly bot: Bot;
  private readonly log: Logger;
  private readonly presenter: Presenter<MessageRun, string>;
  private readonly inbound: InboundIntake;
  private updates?: UpdateSource;
  private me!: BotIdentity;
  private readonly getUpdates: ReturnType<typeof getUpdatesHealth>;

  constructor(
    @Inject(Bus) private readonly bus: Bus,
    @Inject(TELEGRAM_OPTIONS) private readonly opts: TelegramIngressOptions,
  ) {
    this.log = opts.logger;
    this.inbound = new InboundIntake("Telegram", this.log);
    this.getUpdates = getUpdatesHealth(this.log);
    this.bot = new Bot(opts.botToken, { client: { ...(opts.apiUrl && { apiRoot: opts.apiUrl }) } });
    // Installed first, so it sits under auto-retry and sees every 429 attempt, not only the last.
    this.bot.api.config.use(async (prev, method, payload, signal) => {
      const res = await prev(method, payload, signal);
      if (!res.ok && res.error_code === 429) metrics.platformRateLimits.inc({ adapter: opts.adapter });
      return res;
    });
    this.bot.api.config.use(this.getUpdates.transformer);
    // 429 Too Many Requests: wait `retry_after` and retry, so coalesced edits and answers are never lost.
    this.bot.api.config.use(autoRetry({ maxRetryAttempts: 5, maxDelaySeconds: 300 }));
    this.presenter = new Presenter(new MessageLayout(new TelegramSurface(this.bot.api)), {
      files: bus,
      maxBytes: this.maxBytes,
      log: this.log,
      editIntervalMs: opts.editIntervalMs ?? 1500,
      typingIntervalMs: opts.typingIntervalMs ?? 4500,
      deliveries: new DeliveryReceipts(opts.adapter, busReceipts(bus, opts.adapter), this.log),
    });
  }

  /** The adapter this ingress serves (its name in config.json). */
  get adapter(): string {
    return this.opts.adapter;
  }

  private get maxBytes(): number {
    return this.opts.maxAttachmentBytes ?? DEFAULT_MAX_ATTACHMENT_BYTES;
  }

  async onApplicationBootstrap(): Promise<void> {
    try {
      await this.bot.init();
    } catch (err) {
      const why = err instanceof GrammyError && err.error_code === 401 ? "the bot token was refused" : "could not reach the Bot API";
      throw new Error(`telegram adapter "${this.opts.adapter}": ${why} (getMe: ${(err as Error).message})`, { cause: err });
    }
    this.me = { id: this.bot.botInfo.id, username: this.bot.botInfo.username };
    this.bot.on("message", (ctx) => this.onMessage(ctx.message));
    this.bot.on("callback_query:data", (ctx) => this.onButton(ctx));
    // A failing handler is logged; receiving goes on.
    this.bot.catch((err) => this.log.error({ err: err.error, updateId: err.ctx.update.update_id }, `telegram update handling failed: ${(err.error as Error)?.message ?? err.error}`));
    const o = this.opts;
    this.updates = o.webhookUrl ? await startWebhook(this.bot, { ...o, webhookUrl: o.webhookUrl }, this.log) : await startPolling(this.bot, o, this.log, this.getUpdates);
    const updates = this.updates;
    this.unready = serviceReadiness(`ingress-${o.adapter}`, this.bus, () => updates.problem());
    this.log.info({ adapter: o.adapter, bot: this.me.username, via: this.updates.describe }, "telegram ingress receiving");
  }

  private unready?: () => void;

  /** Stops receiving before the outbound consumer stops, so what is in hand is published and drawn. */
  async beforeJetStreamDrain(): Promise<void> {
    this.unready?.();
    await this.updates?.stop();
    await this.inbound.idle();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.presenter.close();
  }

  /** One of this adapter's outbound events (OutboundController brings them once the service listens). */
  draw(channelId: string, event: OutboundEvent): Promise<boolean> {
    return this.presenter.handle(channelId, event);
  }

  /** Not awaited by grammY beyond queueing: a slow download must not hold the other chats. */
  private onMessage(msg: Message): void {
    if (msg.from?.id === this.me.id) return;
    this.inbound.take(String(msg.chat.id), String(msg.message_id), () => this.ingest(msg));
  }

  private async ingest(msg: Message): Promise<void> {
    const m = toTelegramInbound(msg, this.me);
    if (!m) return;
    if (m.isDirect && !m.sender.isBot && !mayDirectMessage(m.sender.id, this.opts)) {
      this.log.info({ chat: m.channelId, user: m.sender.id }, "direct message refused (dm policy)");
      await this.bot.api.sendMessage(msg.chat.id, DM_REFUSAL).catch((err: unknown) => this.log.warn({ err }, "could not send the DM refusal"));
      return;
    }
    const { files, ...rest } = m;
    const ref = { adapter: this.opts.adapter, channelId: m.channelId };
    const attachments = [];
    for (const f of files) attachments.push(await importAttachment({ ...f, download: (max) => this.download(f, max) }, ref, { files: this.bus, maxBytes: this.maxBytes }));
    await publishInbound(this.bus, this.opts.adapter, { ...rest, attachments }, { log: this.log });
  }

  /** getFile, then the bytes from the Bot API's file endpoint. */
  private async download(f: TelegramFile, maxBytes: number): Promise<{ bytes: Uint8Array; mimeType?: string }> {
    const file = await this.bot.api.getFile(f.fileId);
    if (!file.file_path) throw new Error("Telegram gave no file path (files over 20 MB cannot be downloaded by bots)");
    const root = this.opts.apiUrl ?? "https://api.telegram.org";
    return readDownload(await fetch(`${root}/file/bot${this.opts.botToken}/${file.file_path}`), maxBytes);
  }

  /** Allow once / Deny -> `approval_decision`; a non-approver is told so in an alert only they see. */
  private async onButton(ctx: Context): Promise<void> {
    const q = ctx.callbackQuery!;
    const parsed = parseApprovalButton(q.data ?? "");
    if (!parsed) return void (await ctx.answerCallbackQuery());
    const sender = senderOf(q.from);
    const chat = q.message?.chat.id;
    const { refusal } = await decideApproval(
      { bus: this.bus, adapter: this.opts.adapter, dialect: this.presenter.dialect, log: this.log },
      this.presenter.approval(parsed.approvalId),
      { ...parsed, user: { id: sender.id, username: sender.username }, ...(chat !== undefined && { channel: String(chat) }) },
    );
    // Markdown notes are for messages; an alert is plain text.
    await ctx.answerCallbackQuery(refusal ? { text: refusal.replace(/\[(\d+)\]\(tg:\/\/user\?id=\d+\)/g, "$1"), show_alert: true } : {});
  }
}
