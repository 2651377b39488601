import { Directory, downloadFile, type IngressDefinition, metrics, parseApprovalButton, type PlatformConnection, type PlatformContext, type PlatformMessage, RecentMap } from "@mom/ingress-sdk";
import { type ButtonInteraction, ChannelType, Client, Events, GatewayIntentBits, type Message, MessageFlags, MessageType, Partials, RESTEvents, Status } from "discord.js";
import pTimeout from "p-timeout";
import { type DiscordApi, RestDiscordApi } from "./discord-api.js";
import { DiscordSettings } from "./discord-options.js";
import { namesForMentions } from "./mentions.js";
import { APPROVAL_PREFIX, DiscordLayout, type DiscordPrompt } from "./renderer.js";

/** Gateway intents mom needs: server text channels and their threads, DMs, and the text of messages (privileged). */
export const DISCORD_INTENTS = [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent];

/** Close codes after which discord.js gives up, with what to do about them. */
const FATAL_CLOSE_HINTS: Record<number, string> = {
  4004: "Discord rejected the bot token: check adapters.<name>.botToken",
  4013: "invalid gateway intents",
  4014: "Discord refused a privileged intent: enable MESSAGE CONTENT INTENT under Bot in the Discord developer portal",
};

/**
 * One Discord bot: gateway messages become messages of `<adapter>/<channel>` (a thread's go to
 * its parent channel and are answered in the thread), runs are drawn by the DiscordLayout
 * (renderer.ts) over discord.js's REST client (see docs/discord.md). Everything else is the
 * ingress shell's.
 */
export const discordIngress: IngressDefinition<typeof DiscordSettings> = {
  platform: "discord",
  settings: DiscordSettings,
  connect(ctx) {
    const { settings: s, log, adapter } = ctx;
    // DMs arrive for channels discord.js has not cached.
    const client = new Client({ intents: DISCORD_INTENTS, partials: [Partials.Channel], ...(s.apiUrl && { rest: { api: s.apiUrl } }) });
    const api = new RestDiscordApi(client);
    // Who mom has seen (`@name` -> `<@id>`), and the Discord channel (thread) each message it published came from.
    const people = new Directory({ log, caseless: true, capacity: 10_000 });
    const channels = new RecentMap<string>();
    const idOf = (name: string) => people.idOf(name) ?? client.users.cache.find((u) => u.username.toLowerCase() === name.toLowerCase())?.id;
    let receiving = false;
    client.on(Events.MessageCreate, (m) => {
      if (!receiving || m.author.id === client.user?.id) return;
      // A resumed gateway may replay what we already had: the shell takes each message once.
      void ctx.inbound.receiveInTurn(m.channelId, m.id, () => convert(client, api, people, channels, m)).catch(() => {});
    });
    client.on(Events.InteractionCreate, (i) => {
      if (i.isButton()) onButton(ctx, i).catch((err: unknown) => log.error({ err, customId: i.customId }, "could not handle a button click"));
    });
    client.on(Events.Error, (err) => log.error({ err }, "discord client error"));
    client.on(Events.ShardResume, (_id, replayed) => log.info({ replayed }, "discord gateway resumed"));
    client.on(Events.ShardReconnecting, () => log.info("discord gateway reconnecting"));
    client.on(Events.ShardDisconnect, (ev) => log.error({ code: ev.code, hint: FATAL_CLOSE_HINTS[ev.code] }, `discord gateway closed for good (${ev.code})`));
    client.rest.on(RESTEvents.RateLimited, () => metrics.platformRateLimits.inc({ adapter }));
    const connection: PlatformConnection & { client: Client } = {
      client,
      surface: new DiscordLayout({ api, idOf, channelOfMessage: (id) => channels.get(id), log }),
      editIntervalMs: 1000,
      typingIntervalMs: 8000, // Discord shows "typing…" for about 10 s
      async start() {
        receiving = true;
        const milliseconds = s.readyTimeoutMs ?? 60_000;
        const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
        try {
          await client.login(s.botToken);
          await pTimeout(ready, { milliseconds, message: `the gateway was not ready after ${milliseconds} ms` });
        } catch (err) {
          await client.destroy().catch(() => {});
          throw new Error(`discord adapter "${adapter}": could not connect to Discord: ${(err as Error).message}`, { cause: err });
        }
        log.info({ bot: client.user?.username, botId: client.user?.id, guilds: client.guilds.cache.size }, "discord ingress ready");
      },
      async stop() {
        receiving = false;
      },
      // The REST client draws until the very end: the gateway and it go together.
      close: () => client.destroy(),
      // The manager's own status stays Ready once reached; each shard's follows its connection.
      problem() {
        const down = client.ws.shards.find((sh) => sh.status !== Status.Ready);
        return down ? `Discord gateway ${Status[down.status]?.toLowerCase() ?? "not connected"}` : undefined;
      },
    };
    return connection;
  },
};

/** One Discord message -> a message of its channel (a thread's parent), in its turn; undefined for what is no message to mom. */
async function convert(client: Client, api: DiscordApi, people: Directory, channels: RecentMap<string>, msg: Message): Promise<PlatformMessage | undefined> {
  const me = client.user;
  if (!me || msg.system || (msg.type !== MessageType.Default && msg.type !== MessageType.Reply)) return undefined;
  for (const u of [msg.author, ...msg.mentions.users.values()]) people.learn({ id: u.id, username: u.username, isBot: u.bot });
  const isDirect = msg.channel.type === ChannelType.DM || !msg.guildId;

  // A thread belongs to its parent channel's conversation: answers go back into the thread.
  let channelId = msg.channelId;
  let replyTo: string | undefined;
  if (msg.channel.isThread()) {
    const parentId = msg.channel.parentId ?? (await client.channels.fetch(msg.channelId, { force: true }).then((c) => (c?.isThread() ? c.parentId : null), () => null));
    if (parentId) {
      channelId = parentId;
      replyTo = msg.channelId;
    }
  }
  const botMentioned = msg.mentions.users.has(me.id) || msg.mentions.roles.some((r) => r.tags?.botId === me.id);
  const text = namesForMentions(msg.content, {
    user: (id) => msg.mentions.users.get(id)?.username ?? client.users.cache.get(id)?.username,
    role: (id) => msg.mentions.roles.get(id)?.name ?? msg.guild?.roles.cache.get(id)?.name,
    channel: (id) => {
      const c = client.channels.cache.get(id);
      return c && "name" in c && c.name ? c.name : undefined;
    },
  });
  if (!text.trim() && msg.attachments.size === 0) return undefined;
  const displayName = msg.member?.displayName ?? msg.author.globalName ?? undefined;
  channels.set(msg.id, msg.channelId);
  return {
    id: msg.id,
    channelId,
    timestamp: msg.createdAt.toISOString(),
    sender: { id: msg.author.id, username: msg.author.username, ...(displayName && displayName !== msg.author.username && { displayName }), isBot: msg.author.bot },
    text,
    rawText: msg.content,
    // Other bots are logged but never trigger a run (no bot-to-bot loops).
    isMention: !msg.author.bot && (isDirect || botMentioned),
    isDirect,
    ...(replyTo && { replyTo }),
    files: [...msg.attachments.values()].map((a) => ({ filename: a.name, size: a.size, ...(a.contentType && { mimeType: a.contentType }), download: (max: number, signal?: AbortSignal) => downloadFile(a.url, max, { signal }) })),
    refuse: (refusal) => api.send(msg.channelId, { content: refusal, replyTo: msg.id }),
  };
}

/**
 * Allow once / Deny on an approval prompt. Discord wants the click answered within 3 s, so it is
 * answered as soon as the shell knows who may decide: an approver's click is acknowledged (the
 * prompt is updated when the runner says how the approval ended), anyone else is told privately.
 */
async function onButton(ctx: PlatformContext<DiscordSettings>, i: ButtonInteraction): Promise<void> {
  const parsed = parseApprovalButton(i.customId, APPROVAL_PREFIX);
  if (!parsed) return;
  const ch = i.channel;
  const channel = ch?.isThread() && ch.parentId ? ch.parentId : i.channelId;
  const prompt: DiscordPrompt = { messageChannelId: i.message.channelId, messageId: i.message.id };
  await ctx.inbound.decide({ ...parsed, user: { id: i.user.id, username: i.user.username }, channel, prompt: { ref: prompt, text: i.message.content } }, ({ refusal }) =>
    refusal ? i.reply({ content: refusal, flags: MessageFlags.Ephemeral, allowedMentions: { parse: [] } }) : i.deferUpdate(),
  );
}
