import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from "@nestjs/common";
import { type BeforeJetStreamDrain, Bus, lastPerSubject, type OutboundDrawing, type OutboundEvent, readRange, serviceReadiness } from "@mom/ingress-sdk";
import { metrics } from "@mom/ingress-sdk";
import type { Attachment, ChannelMessage } from "@mom/ingress-sdk";
import { markdownToMrkdwn } from "@mom/ingress-sdk";
import { busReceipts, DeliveryReceipts, DEFAULT_MAX_ATTACHMENT_BYTES, DM_REFUSAL, decideApproval, importAttachment, mayDirectMessage, InboundIntake, publishInbound } from "@mom/ingress-sdk";
import { App, SocketModeReceiver } from "@slack/bolt";
import { type WebClient, WebClientEvent } from "@slack/web-api";
import type { Logger } from "pino";
import { boltLogger } from "./bolt-logger.js";
import { backfillChannel, type InboundHistory, lastPublishedTs } from "./slack-backfill.js";
import { SlackDirectory } from "./slack-directory.js";
import { downloadSlackFile } from "./slack-files.js";
import { isConversationMessage, type SlackMessageEvent, toChannelMessage } from "./slack-inbound.js";
import {
  DEFAULT_BACKFILL_ANSWER_WINDOW_MS,
  DEFAULT_MESSAGE_LIMIT,
  DEFAULT_UPDATE_INTERVAL_MS,
  SLACK_OPTIONS,
  type SlackIngressOptions,
} from "./slack-options.js";
import { WebApiPoster } from "./slack-poster.js";
import { APPROVAL_ALLOW, APPROVAL_DENY, SlackRenderer } from "./slack-renderer.js";

/** The parts of a block_actions payload the approval buttons use. */
interface ApprovalClickBody {
  user: { id: string; username?: string; name?: string };
  channel?: { id: string };
  container?: { channel_id?: string; message_ts?: string };
}

/**
 * One Slack workspace: Socket Mode events become ChannelMessages on `mom.in.<adapter>.<channel>`
 * (each message once, in order per channel), and `mom.out.<adapter>.*` is rendered back into
 * Slack by the SlackRenderer.
 */
@Injectable()
export class SlackIngressService implements OnApplicationBootstrap, BeforeJetStreamDrain, OnApplicationShutdown, OutboundDrawing {
  private readonly log: Logger;
  private app?: App;
  private client!: WebClient;
  private directory!: SlackDirectory;
  private renderer!: SlackRenderer;
  private botUserId = "";
  private botId = "";
  /** Each message once (app_mention + message, retries), in order per channel. */
  private readonly inbound: InboundIntake;
  private stopping = false;

  constructor(
    @Inject(Bus) private readonly bus: Bus,
    @Inject(SLACK_OPTIONS) private readonly opts: SlackIngressOptions,
  ) {
    this.log = opts.logger;
    this.inbound = new InboundIntake("Slack", this.log);
  }

  get adapter(): string {
    return this.opts.adapter;
  }

  /** The bot's own user id, once started. */
  get botUser(): string {
    return this.botUserId;
  }

  private get maxBytes(): number {
    return this.opts.maxAttachmentBytes ?? DEFAULT_MAX_ATTACHMENT_BYTES;
  }

  async onApplicationBootstrap(): Promise<void> {
    const logger = boltLogger(this.log.child({ component: "bolt" }));
    const clientOptions = {
      ...(this.opts.apiUrl && { slackApiUrl: this.opts.apiUrl }),
      ...(this.opts.retryConfig && { retryConfig: this.opts.retryConfig }),
    };
    // Socket Mode opens its connection through its own WebClient, built from installerOptions.clientOptions.
    const receiver = new SocketModeReceiver({
      appToken: this.opts.appToken,
      logger,
      ...(this.opts.socketPingTimeoutMs && { clientPingTimeout: this.opts.socketPingTimeoutMs }),
      installerOptions: { clientOptions: { ...(this.opts.apiUrl && { slackApiUrl: this.opts.apiUrl }) } },
    });
    const app = new App({ token: this.opts.botToken, receiver, logger, clientOptions, deferInitialization: true });
    this.client = app.client;
    this.client.on(WebClientEvent.RATE_LIMITED, () => metrics.platformRateLimits.inc({ adapter: this.opts.adapter }));
    let auth;
    try {
      auth = await this.client.auth.test();
    } catch (err) {
      throw new Error(`slack adapter ${this.opts.adapter}: the bot token was refused (auth.test: ${(err as Error).message})`, { cause: err });
    }
    this.botUserId = auth.user_id ?? "";
    this.botId = auth.bot_id ?? "";
    await app.init();
    this.directory = new SlackDirectory(this.client, this.log);
    await this.directory.learn();

    this.renderer = new SlackRenderer({
      api: new WebApiPoster(this.client),
      files: this.bus,
      maxBytes: this.maxBytes,
      toMrkdwn: (md) => markdownToMrkdwn(md, { userIdFor: (name) => this.directory.userIdFor(name) }),
      log: this.log,
      updateIntervalMs: this.opts.updateIntervalMs ?? DEFAULT_UPDATE_INTERVAL_MS,
      messageLimit: this.opts.messageLimit ?? DEFAULT_MESSAGE_LIMIT,
      deliveries: new DeliveryReceipts(this.opts.adapter, busReceipts(this.bus, this.opts.adapter), this.log),
    });
    app.event("message", async ({ event }) => this.onEvent(event as unknown as SlackMessageEvent));
    app.event("app_mention", async ({ event }) => this.onEvent(event as unknown as SlackMessageEvent));
    app.action({ action_id: new RegExp(`^(${APPROVAL_ALLOW}|${APPROVAL_DENY})$`) }, async ({ ack, body, action }) => {
      await ack();
      await this.onApprovalClick(body as unknown as ApprovalClickBody, action as unknown as { action_id: string; value?: string });
    });
    app.error(async (err) => {
      this.log.error({ err }, `slack event handling failed: ${err.message}`);
    });

    await this.startBackfill();
    this.app = app;
    await app.start();
    this.unready = serviceReadiness(`ingress-${this.opts.adapter}`, this.bus, () => (receiver.client.websocket?.isActive() ? undefined : "Slack Socket Mode not connected"));
    this.log.info({ adapter: this.opts.adapter, botUserId: this.botUserId }, "slack ingress connected (Socket Mode)");
  }

  private unready?: () => void;

  /** Stops receiving before the outbound consumer stops, so what is in hand is published and drawn. */
  async beforeJetStreamDrain(): Promise<void> {
    this.unready?.();
    this.stopping = true;
    await this.app?.stop().catch((err: unknown) => this.log.warn({ err }, "socket mode disconnect failed"));
    await this.inbound.idle();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.renderer?.close();
  }

  /** One of this adapter's outbound events (OutboundController brings them once the service listens). */
  draw(channelId: string, event: OutboundEvent): Promise<boolean> {
    return this.renderer.handle(channelId, event);
  }

  /**
   * Queues backfill of every channel of this adapter that mom has heard from (its messages on the
   * inbound stream), ahead of live events there.
   */
  private async startBackfill(): Promise<void> {
    if (this.opts.backfill === false) return;
    const history = this.inboundHistory();
    let channels;
    try {
      channels = await history.lastOfEachChannel();
    } catch (err) {
      this.log.error({ err }, `backfill is off: cannot read this adapter's messages on the inbound stream: ${(err as Error).message}`);
      return;
    }
    for (const { channelId, last } of channels) {
      void this.inbound
        .queueFor(channelId, async () => {
          const after = await lastPublishedTs(history, channelId, last);
          if (!after) return;
          await backfillChannel({ client: this.client, channel: channelId, after, log: this.log, handle: (ev) => this.ingest({ ...ev, channel: channelId }, "backfill") });
        })
        .catch((err) => this.log.warn({ err, channel: channelId }, "backfill failed"));
    }
  }

  /** This adapter's subjects of the inbound stream (its NATS user may create consumers on those only). */
  private inboundHistory(): InboundHistory {
    const stream = this.bus.subjects.stream("IN");
    const subject = (channelId: string) => this.bus.subjects.channel("in", { adapter: this.opts.adapter, channelId });
    return {
      lastOfEachChannel: async () =>
        (await lastPerSubject(this.bus, stream, this.bus.subjects.wildcard("in", this.opts.adapter))).flatMap((last) => {
          const ref = this.bus.subjects.parse(last.subject);
          return ref && ref.adapter === this.opts.adapter ? [{ channelId: ref.channelId, last }] : [];
        }),
      channelFrom: (channelId, fromSeq) => readRange(this.bus, stream, subject(channelId), { seq: fromSeq }),
    };
  }

  /** A Socket Mode message or app_mention event: each message once, in order per channel. */
  private onEvent(ev: SlackMessageEvent): Promise<void> {
    if (!isConversationMessage(ev) || this.isOwn(ev)) return Promise.resolve();
    // Not awaited by Bolt's listener chain beyond queueing: a slow download must not hold the socket.
    this.inbound.take(ev.channel, ev.ts, () => this.ingest(ev, "event"));
    return Promise.resolve();
  }

  /**
   * Allow once / Deny on an approval prompt -> `approval_decision` on mom.ctl. Someone who may not
   * decide is told so privately; the click is still sent, and the runner refuses and records it.
   */
  private async onApprovalClick(body: ApprovalClickBody, action: { action_id: string; value?: string }): Promise<void> {
    const approvalId = action.value;
    if (!approvalId) return;
    const user = body.user.id;
    const pending = this.renderer.approval(approvalId);
    const username = body.user.username ?? body.user.name ?? (await this.directory.resolveUser(user)).username;
    const fallback = body.channel?.id ?? body.container?.channel_id;
    const { refusal } = await decideApproval(
      { bus: this.bus, adapter: this.opts.adapter, dialect: this.renderer.dialect, log: this.log },
      pending,
      { approvalId, decision: action.action_id === APPROVAL_ALLOW ? "allow-once" : "deny", user: { id: user, username }, ...(fallback && { channel: fallback }) },
    ).catch((err) => {
      this.log.error({ err, approvalId }, "could not publish the approval decision");
      return { refusal: undefined };
    });
    if (refusal && pending) {
      const threadTs = pending.prompt?.threadTs;
      await this.client.chat.postEphemeral({ channel: pending.channel, user, text: refusal, ...(threadTs && { thread_ts: threadTs }) }).catch((err) => this.log.warn({ err }, "could not tell a non-approver"));
    }
  }

  private isOwn(ev: SlackMessageEvent): boolean {
    return (!!ev.user && ev.user === this.botUserId) || (!!ev.bot_id && ev.bot_id === this.botId);
  }

  /** Converts, applies the DM policy, brings files into the Object Store and publishes. */
  private async ingest(ev: SlackMessageEvent, source: "event" | "backfill"): Promise<void> {
    if (this.stopping && source === "backfill") return;
    if (!isConversationMessage(ev) || this.isOwn(ev)) return;
    if (source === "backfill") this.inbound.note(ev.channel, ev.ts);
    const sender = ev.user
      ? await this.directory.resolveUser(ev.user)
      : { id: ev.bot_id ?? "unknown", username: ev.username || ev.bot_id || "bot", isBot: true };
    const isDirect = ev.channel_type === "im" || (ev.channel_type === undefined && this.directory.isIm(ev.channel));
    if (isDirect && !sender.isBot && !mayDirectMessage(sender.id, this.opts)) {
      this.log.info({ channel: ev.channel, user: sender.id }, "direct message refused (adapter dm policy)");
      if (source === "event") await this.client.chat.postMessage({ channel: ev.channel, text: DM_REFUSAL }).catch((err) => this.log.warn({ err }, "could not post the DM refusal"));
      return;
    }
    const attachments = await this.attachments(ev);
    let message = toChannelMessage(ev, {
      botUserId: this.botUserId,
      sender,
      names: { user: (id) => this.directory.user(id)?.username, channel: (id) => this.directory.channelName(id) },
      isDirect,
      attachments,
    });
    if (source === "backfill") {
      const age = Date.now() - Date.parse(message.timestamp);
      const answer = message.isMention && age <= (this.opts.backfillAnswerWindowMs ?? DEFAULT_BACKFILL_ANSWER_WINDOW_MS);
      message = { ...message, isMention: answer, metadata: { backfilled: true } };
    }
    await this.publish(message);
  }

  private async attachments(ev: SlackMessageEvent): Promise<Attachment[]> {
    const ref = { adapter: this.opts.adapter, channelId: ev.channel };
    const out: Attachment[] = [];
    for (const f of ev.files ?? []) {
      const filename = f.name || f.title || f.id || "file";
      const file = { filename, ...(f.size !== undefined && { size: f.size }), ...(f.mimetype && { mimeType: f.mimetype }), download: (max: number) => downloadSlackFile(f, this.opts.botToken, max) };
      const a = await importAttachment(file, ref, { files: this.bus, maxBytes: this.maxBytes });
      if (a.note) this.log.warn({ channel: ev.channel, file: f.id }, `Slack file not brought in: ${a.note}`);
      out.push(a);
    }
    return out;
  }

  private async publish(message: ChannelMessage): Promise<void> {
    await publishInbound(this.bus, this.opts.adapter, message, { log: this.log });
  }
}
