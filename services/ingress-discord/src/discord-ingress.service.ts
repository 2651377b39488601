import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from "@nestjs/common";
import { type BeforeJetStreamDrain, Bus, type OutboundDrawing, type OutboundEvent, serviceReadiness } from "@mom/ingress-sdk";
import { metrics } from "@mom/ingress-sdk";
import type { ChannelMessage, ChannelRef } from "@mom/ingress-sdk";
import { busReceipts, DeliveryReceipts, DEFAULT_MAX_ATTACHMENT_BYTES, DM_REFUSAL, decideApproval, importAttachment, InboundIntake, mayDirectMessage, publishInbound, RecentMap, readDownload } from "@mom/ingress-sdk";
import { type ButtonInteraction, ChannelType, Client, Events, GatewayIntentBits, type Message, MessageFlags, MessageType, Partials, RESTEvents, Status, type User } from "discord.js";
import type { Logger } from "pino";
import { type DiscordApi, RestDiscordApi } from "./discord-api.js";
import { DISCORD_OPTIONS, type DiscordIngressOptions } from "./discord-options.js";
import { namesForMentions } from "./mentions.js";
import { DiscordRenderer, parseApprovalButton } from "./renderer.js";

/** Gateway intents mom needs: server text channels and their threads, DMs, and the text of messages (privileged). */
export const DISCORD_INTENTS = [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent];

/** Close codes after which discord.js gives up, with what to do about them. */
const FATAL_CLOSE_HINTS: Record<number, string> = {
  4004: "Discord rejected the bot token: check adapters.<name>.botToken",
  4013: "invalid gateway intents",
  4014: "Discord refused a privileged intent: enable MESSAGE CONTENT INTENT under Bot in the Discord developer portal",
};

/**
 * One Discord bot: gateway messages become ChannelMessages on `<ns>.in.<adapter>.<channel>`,
 * and the adapter's outbound events are rendered back into Discord (renderer.ts).
 */
@Injectable()
export class DiscordIngressService implements OnApplicationBootstrap, BeforeJetStreamDrain, OnApplicationShutdown, OutboundDrawing {
  readonly client: Client;
  readonly api: DiscordApi;
  private readonly renderer: DiscordRenderer;
  private readonly log: Logger;
  /** Message id -> the Discord channel (or thread) it was posted in, for notices about it. */
  private readonly messageChannels = new RecentMap<string>();
  /** Lower-case username -> user id, learnt from messages, for turning `@name` into `<@id>`. */
  private readonly userIds = new RecentMap<string>();
  /** Each message once, in order per Discord channel (attachments take time to download). */
  private readonly intake: InboundIntake;
  private closing = false;

  constructor(
    @Inject(Bus) private readonly bus: Bus,
    @Inject(DISCORD_OPTIONS) private readonly opts: DiscordIngressOptions,
  ) {
    this.log = opts.logger;
    this.intake = new InboundIntake("Discord", this.log);
    this.client = new Client({
      intents: DISCORD_INTENTS,
      // DMs arrive for channels discord.js has not cached.
      partials: [Partials.Channel],
      ...(opts.apiUrl && { rest: { api: opts.apiUrl } }),
    });
    this.api = new RestDiscordApi(this.client);
    this.renderer = new DiscordRenderer({
      api: this.api,
      getFile: (key, o) => this.bus.getFile(key, o),
      idOf: (username) => this.idOf(username),
      channelOfMessage: (id) => this.messageChannels.get(id),
      maxBytes: this.maxBytes,
      editIntervalMs: opts.editIntervalMs ?? 1000,
      typingIntervalMs: opts.typingIntervalMs ?? 8000,
      log: this.log,
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
    const { client, opts } = this;
    client.on(Events.MessageCreate, (m) => this.inbound(m));
    client.on(Events.InteractionCreate, (i) => {
      if (i.isButton()) this.onButton(i).catch((err: unknown) => this.log.error({ err, customId: i.customId }, "could not handle a button click"));
    });
    client.on(Events.Error, (err) => this.log.error({ err }, "discord client error"));
    client.on(Events.ShardResume, (_id, replayed) => this.log.info({ replayed }, "discord gateway resumed"));
    client.on(Events.ShardReconnecting, () => this.log.info("discord gateway reconnecting"));
    client.on(Events.ShardDisconnect, (ev) => this.log.error({ code: ev.code, hint: FATAL_CLOSE_HINTS[ev.code] }, `discord gateway closed for good (${ev.code})`));
    client.rest.on(RESTEvents.RateLimited, () => metrics.platformRateLimits.inc({ adapter: opts.adapter }));
    const timeoutMs = opts.readyTimeoutMs ?? 60_000;
    let timer: NodeJS.Timeout | undefined;
    const ready = new Promise<void>((resolve, reject) => {
      client.once(Events.ClientReady, () => resolve());
      timer = setTimeout(() => reject(new Error(`discord adapter "${opts.adapter}": the gateway was not ready after ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await client.login(opts.botToken);
      await ready;
    } catch (err) {
      await client.destroy().catch(() => {});
      const reason = (err as Error).message;
      throw new Error(`discord adapter "${opts.adapter}": could not connect to Discord: ${reason}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
    this.log.info({ bot: client.user?.username, botId: client.user?.id, guilds: client.guilds.cache.size }, "discord ingress ready");
    // The manager's own status stays Ready once reached; each shard's follows its connection.
    this.unready = serviceReadiness(`ingress-${opts.adapter}`, this.bus, () => {
      const down = client.ws.shards.find((s) => s.status !== Status.Ready);
      return down ? `Discord gateway ${Status[down.status]?.toLowerCase() ?? "not connected"}` : undefined;
    });
  }

  private unready?: () => void;

  /** Takes no message more before the outbound consumer stops. */
  beforeJetStreamDrain(): void {
    this.unready?.();
    this.closing = true;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.intake.idle();
    await this.renderer.close();
    await this.client.destroy();
  }

  /** One of this adapter's outbound events (OutboundController brings them once the service listens). */
  draw(channelId: string, event: OutboundEvent): Promise<boolean> {
    return this.renderer.handle(channelId, event);
  }

  private idOf(username: string): string | undefined {
    const name = username.toLowerCase();
    return this.userIds.get(name) ?? this.client.users.cache.find((u) => u.username.toLowerCase() === name)?.id;
  }

  private learn(u: User): void {
    this.userIds.set(u.username.toLowerCase(), u.id);
  }

  /** Messages of one Discord channel are handled in order (attachments take time to download). */
  private inbound(m: Message): void {
    if (this.closing) return;
    // A resumed gateway may replay what we already had; the bus dedupes too (msg-id), this saves the work.
    this.intake.take(m.channelId, m.id, () => this.onMessage(m));
  }

  /** One Discord message -> one ChannelMessage. */
  async onMessage(msg: Message): Promise<ChannelMessage | undefined> {
    const me = this.client.user;
    if (!me || msg.author.id === me.id) return undefined;
    if (msg.system || (msg.type !== MessageType.Default && msg.type !== MessageType.Reply)) return undefined;
    this.learn(msg.author);
    for (const u of msg.mentions.users.values()) this.learn(u);

    const isDirect = msg.channel.type === ChannelType.DM || !msg.guildId;
    if (isDirect && !mayDirectMessage(msg.author.id, this.opts)) {
      this.log.info({ userId: msg.author.id, username: msg.author.username }, "direct message refused (dm policy)");
      if (!msg.author.bot) await this.api.send(msg.channelId, { content: DM_REFUSAL, replyTo: msg.id }).catch((err: unknown) => this.log.warn({ err }, "could not send the DM refusal"));
      return undefined;
    }

    // A thread belongs to its parent channel's conversation: answers go back into the thread.
    let channelId = msg.channelId;
    let replyTo: string | undefined;
    if (msg.channel.isThread()) {
      const parentId = msg.channel.parentId ?? (await this.client.channels.fetch(msg.channelId, { force: true }).then((c) => (c?.isThread() ? c.parentId : null), () => null));
      if (parentId) {
        channelId = parentId;
        replyTo = msg.channelId;
      }
    }
    const ref: ChannelRef = { adapter: this.opts.adapter, channelId };

    const botMentioned = msg.mentions.users.has(me.id) || msg.mentions.roles.some((r) => r.tags?.botId === me.id);
    // Other bots are logged but never trigger a run (no bot-to-bot loops).
    const isMention = !msg.author.bot && (isDirect || botMentioned);
    const text = namesForMentions(msg.content, {
      user: (id) => msg.mentions.users.get(id)?.username ?? this.client.users.cache.get(id)?.username,
      role: (id) => msg.mentions.roles.get(id)?.name ?? msg.guild?.roles.cache.get(id)?.name,
      channel: (id) => {
        const c = this.client.channels.cache.get(id);
        return c && "name" in c && c.name ? c.name : undefined;
      },
    });
    const attachments = [];
    for (const a of msg.attachments.values()) {
      const file = { filename: a.name, size: a.size, ...(a.contentType && { mimeType: a.contentType }), download: async (max: number) => readDownload(await fetch(a.url), max) };
      attachments.push(await importAttachment(file, ref, { files: this.bus, maxBytes: this.maxBytes }));
    }
    if (!text.trim() && attachments.length === 0) return undefined;

    const displayName = msg.member?.displayName ?? msg.author.globalName ?? undefined;
    const message: ChannelMessage = {
      id: msg.id,
      channelId,
      timestamp: msg.createdAt.toISOString(),
      sender: { id: msg.author.id, username: msg.author.username, ...(displayName && displayName !== msg.author.username && { displayName }), isBot: msg.author.bot },
      text,
      rawText: msg.content,
      attachments,
      isMention,
      isDirect,
      ...(replyTo && { replyTo }),
    };
    this.messageChannels.set(msg.id, msg.channelId);
    await publishInbound(this.bus, this.opts.adapter, message, { log: this.log });
    return message;
  }

  /**
   * Allow once / Deny on an approval prompt -> `approval_decision` on mom.ctl. The click is
   * answered at once (Discord wants an answer within 3 s); the prompt itself is updated when the
   * runner says how the approval ended. Clicks by people who are not approvers are refused with a
   * message only they see, and still sent: the runner refuses and records them.
   */
  async onButton(i: ButtonInteraction): Promise<void> {
    const parsed = parseApprovalButton(i.customId);
    if (!parsed) return;
    const pending = this.renderer.approval(parsed.approvalId);
    const allowed = !pending || pending.approvers.includes(i.user.id);
    if (allowed) await i.deferUpdate();
    const ch = i.channel;
    const channel = ch?.isThread() && ch.parentId ? ch.parentId : i.channelId;
    const { refusal } = await decideApproval(
      { bus: this.bus, adapter: this.opts.adapter, dialect: this.renderer.dialect, log: this.log },
      pending,
      { ...parsed, user: { id: i.user.id, username: i.user.username }, channel },
    );
    if (refusal) await i.reply({ content: refusal, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } });
  }
}
