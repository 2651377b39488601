import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from "@nestjs/common";
import { Bus, type Consumption, fileObjectName } from "@mom/bus";
import { type Attachment, type ChannelMessage, type ControlMessage, OutboundEvent, isStopCommand } from "@mom/contracts";
import { markdownToMrkdwn } from "@mom/format";
import { WorkspaceLayout } from "@mom/store";
import { App, SocketModeReceiver } from "@slack/bolt";
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import { boltLogger } from "./bolt-logger.js";
import { KeyedQueue } from "./keyed-queue.js";
import { DM_REFUSAL, mayDirectMessage } from "./slack-access.js";
import { backfillChannel } from "./slack-backfill.js";
import { SlackDirectory } from "./slack-directory.js";
import { downloadSlackFile } from "./slack-files.js";
import { isConversationMessage, type SlackMessageEvent, toChannelMessage } from "./slack-inbound.js";
import {
  DEFAULT_BACKFILL_ANSWER_WINDOW_MS,
  DEFAULT_MAX_ATTACHMENT_BYTES,
  DEFAULT_MESSAGE_LIMIT,
  DEFAULT_UPDATE_INTERVAL_MS,
  SLACK_OPTIONS,
  type SlackIngressOptions,
} from "./slack-options.js";
import { WebApiPoster } from "./slack-poster.js";
import { APPROVAL_ALLOW, APPROVAL_DENY, SlackRenderer } from "./slack-renderer.js";

const SEEN_MAX = 10_000;

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
export class SlackIngressService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log: Logger;
  private app?: App;
  private client!: WebClient;
  private directory!: SlackDirectory;
  private renderer!: SlackRenderer;
  private consumption?: Consumption;
  private botUserId = "";
  private botId = "";
  private readonly inbound = new KeyedQueue();
  /** channel:ts of messages already handled (or being handled), so app_mention + message and retries count once. */
  private readonly seen = new Set<string>();
  private stopping = false;

  constructor(
    @Inject(Bus) private readonly bus: Bus,
    @Inject(SLACK_OPTIONS) private readonly opts: SlackIngressOptions,
  ) {
    this.log = opts.logger;
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
    });
    this.consumption = await this.bus.consume({
      stream: "OUT",
      durable: `ingress-${this.opts.adapter}`,
      deliver: "new",
      filterSubject: this.bus.subjects.wildcard("out", this.opts.adapter),
      schema: OutboundEvent,
      stage: `ingress-${this.opts.adapter}`,
      // Channels render side by side; within a channel the renderer's queue keeps the order
      // (handlers start in delivery order).
      maxInFlight: 64,
      handler: async (d) => {
        if (d.channel) await this.renderer.handle(d.channel.channelId, d.data);
      },
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

    this.startBackfill();
    this.app = app;
    await app.start();
    this.log.info({ adapter: this.opts.adapter, botUserId: this.botUserId }, "slack ingress connected (Socket Mode)");
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.app?.stop().catch((err: unknown) => this.log.warn({ err }, "socket mode disconnect failed"));
    await this.inbound.idle();
    await this.consumption?.stop();
    await this.renderer?.close();
  }

  /** Queues backfill of every channel of this adapter that has a log, ahead of live events there. */
  private startBackfill(): void {
    if (!this.opts.workspaceDir) return;
    let refs;
    try {
      refs = new WorkspaceLayout(this.opts.workspaceDir).listChannels().filter((r) => r.adapter === this.opts.adapter);
    } catch (err) {
      this.log.warn({ err }, "cannot list channels for backfill");
      return;
    }
    const layout = new WorkspaceLayout(this.opts.workspaceDir);
    for (const ref of refs) {
      void this.inbound
        .push(ref.channelId, () =>
          backfillChannel({
            client: this.client,
            store: layout.channel(ref),
            channel: ref.channelId,
            log: this.log,
            handle: (ev) => this.ingest({ ...ev, channel: ref.channelId }, "backfill"),
          }),
        )
        .catch((err) => this.log.warn({ err, channel: ref.channelId }, "backfill failed"));
    }
  }

  /** A Socket Mode message or app_mention event: each message once, in order per channel. */
  private onEvent(ev: SlackMessageEvent): Promise<void> {
    if (!isConversationMessage(ev) || this.isOwn(ev)) return Promise.resolve();
    const key = `${ev.channel}:${ev.ts}`;
    if (this.seen.has(key)) return Promise.resolve();
    this.remember(key);
    // Not awaited by Bolt's listener chain beyond queueing: a slow download must not hold the socket.
    void this.inbound.push(ev.channel, () => this.ingest(ev, "event")).catch((err) => {
      this.seen.delete(key);
      this.log.error({ err, channel: ev.channel, ts: ev.ts }, `could not hand a Slack message to mom: ${(err as Error).message}`);
    });
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
    const channel = pending?.channel ?? body.channel?.id ?? body.container?.channel_id;
    if (!channel) return;
    if (pending && !pending.approvers.includes(user)) {
      const who = pending.approvers.map((id) => `<@${id}>`).join(", ") || "nobody (adapters.<name>.admins is empty)";
      await this.client.chat
        .postEphemeral({ channel, user, text: `Only ${who} can decide this.`, ...(pending.threadTs && { thread_ts: pending.threadTs }) })
        .catch((err) => this.log.warn({ err }, "could not tell a non-approver"));
    }
    const username = body.user.username ?? body.user.name ?? (await this.directory.resolveUser(user)).username;
    const decision: ControlMessage = {
      type: "approval_decision",
      ts: new Date().toISOString(),
      approvalId,
      decision: action.action_id === APPROVAL_ALLOW ? "allow-once" : "deny",
      decidedBy: { id: user, username },
    };
    const ref = { adapter: this.opts.adapter, channelId: channel };
    await this.bus
      .publish(this.bus.subjects.channel("ctl", ref), decision, `${this.opts.adapter}:${approvalId}:${decision.decision}:${user}`, { retryForMs: 30_000 })
      .catch((err) => this.log.error({ err, approvalId }, "could not publish the approval decision"));
    this.log.info({ approvalId, decision: decision.decision, by: username, approver: pending?.approvers.includes(user) }, "approval decision sent");
  }

  private isOwn(ev: SlackMessageEvent): boolean {
    return (!!ev.user && ev.user === this.botUserId) || (!!ev.bot_id && ev.bot_id === this.botId);
  }

  private remember(key: string): void {
    this.seen.add(key);
    if (this.seen.size > SEEN_MAX) this.seen.delete(this.seen.values().next().value as string);
  }

  /** Converts, applies the DM policy, brings files into the Object Store and publishes. */
  private async ingest(ev: SlackMessageEvent, source: "event" | "backfill"): Promise<void> {
    if (this.stopping && source === "backfill") return;
    if (!isConversationMessage(ev) || this.isOwn(ev)) return;
    if (source === "backfill") this.remember(`${ev.channel}:${ev.ts}`);
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
    const out: Attachment[] = [];
    const ref = { adapter: this.opts.adapter, channelId: ev.channel };
    for (const f of ev.files ?? []) {
      const filename = f.name || f.title || f.id || "file";
      const base = { filename, localPath: "", ...(f.size !== undefined && { size: f.size }), ...(f.mimetype && { mimeType: f.mimetype }) };
      try {
        const file = await downloadSlackFile(f, this.opts.botToken, this.maxBytes);
        const objectKey = fileObjectName(ref, filename);
        await this.bus.putFile(objectKey, file.bytes, file.mimeType ? { mimeType: file.mimeType } : {});
        out.push({ ...base, size: file.bytes.length, objectKey, ...(file.mimeType && { mimeType: file.mimeType }) });
      } catch (err) {
        this.log.warn({ err, channel: ev.channel, file: f.id }, `Slack file not brought in: ${(err as Error).message}`);
        out.push({ ...base, note: (err as Error).message });
      }
    }
    return out;
  }

  private async publish(message: ChannelMessage): Promise<void> {
    const ref = { adapter: this.opts.adapter, channelId: message.channelId };
    if (message.isMention && isStopCommand(message.text)) {
      const runId = this.renderer.currentRun(message.channelId);
      const abort: ControlMessage = {
        type: "abort",
        ts: new Date().toISOString(),
        requestedBy: { id: message.sender.id, username: message.sender.username },
        ...(runId && { runId }),
      };
      await this.bus
        .publish(this.bus.subjects.channel("ctl", ref), abort, `abort:${this.opts.adapter}:${message.channelId}:${message.id}`, { retryForMs: 10_000 })
        .catch((err) => this.log.warn({ err }, "could not publish the abort"));
    }
    const { duplicate } = await this.bus.publish(this.bus.subjects.channel("in", ref), message, `${this.opts.adapter}:${message.channelId}:${message.id}`, {
      retryForMs: 60_000,
    });
    this.log.debug({ channel: message.channelId, msgId: message.id, duplicate, isMention: message.isMention }, "published");
  }
}
