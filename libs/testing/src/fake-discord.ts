// A fake Discord on loopback that speaks the real protocol, for discord.js 14 pointed at it with
// `rest: { api: "http://127.0.0.1:<port>/api" }`:
//
// - REST v10 under /api/v10: GET /gateway/bot (where the gateway is), /users/@me, /users/:id,
//   /channels/:id, POST /users/@me/channels (open a DM), messages create / get / edit / delete
//   (JSON or multipart with `payload_json` + `files[n]`), POST /channels/:id/typing, starting a
//   thread from a message, deleting a channel. Bodies are checked as Discord checks them (2,000
//   characters of content, 10 embeds of at most 6,000 characters, 10 files, the upload limit,
//   no empty messages) and answered with Discord's error bodies. Every response carries
//   X-RateLimit-* headers; `rateLimit()` makes the next matching requests answer 429 with
//   Retry-After, as Discord does.
// - The gateway WebSocket (fake-discord-gateway.ts): HELLO, IDENTIFY -> READY + GUILD_CREATE,
//   heartbeats and ACKs, dispatches numbered per session, RESUME after a dropped socket.
// - A CDN for attachments people send (`say({ attachments })`) and files the bot uploaded.
// - `redeliver()` dispatches a stored message's MESSAGE_CREATE again, as Discord may hand a client
//   an event it already had.
// - Buttons: messages keep their `components`; `click()` dispatches INTERACTION_CREATE and
//   POST /interactions/:id/:token/callback takes the bot's answer (no bot token, answered once).
//
// People are simulated with `say()`: the message is stored and dispatched as MESSAGE_CREATE to
// every session whose intents cover it (without MESSAGE_CONTENT, guild messages that do not
// mention the bot arrive with empty content, as on Discord). Every REST call and gateway frame
// is recorded, so tests assert on what Discord would have seen.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { randomBytes } from "node:crypto";
import type { Socket } from "node:net";
import { CallRecorder } from "./call-recorder.js";
import { FakeGateway, type FakeGatewayFrame } from "./fake-discord-gateway.js";

export { GatewayOp, type FakeGatewayFrame } from "./fake-discord-gateway.js";

export const DiscordIntent = {
  Guilds: 1 << 0,
  GuildMembers: 1 << 1,
  GuildMessages: 1 << 9,
  DirectMessages: 1 << 12,
  MessageContent: 1 << 15,
} as const;

export const DiscordChannelType = {
  GuildText: 0,
  DM: 1,
  GuildAnnouncement: 5,
  PublicThread: 11,
  PrivateThread: 12,
} as const;

export interface FakeDiscordUser {
  id: string;
  username: string;
  global_name: string | null;
  discriminator: string;
  avatar: null;
  bot?: boolean;
  public_flags: number;
}

export interface FakeDiscordChannel {
  id: string;
  type: number;
  name?: string;
  guild_id?: string;
  parent_id?: string | null;
  recipients?: FakeDiscordUser[];
  [key: string]: unknown;
}

export interface FakeDiscordAttachment {
  id: string;
  filename: string;
  size: number;
  url: string;
  proxy_url: string;
  content_type?: string;
  /** The bytes (not part of Discord's JSON; kept for tests). */
  bytes: Buffer;
}

export interface FakeDiscordEmbed {
  title?: string;
  description?: string;
  color?: number;
  fields?: Array<{ name: string; value: string; inline?: boolean }>;
  footer?: { text: string };
  [key: string]: unknown;
}

export interface FakeDiscordMessage {
  id: string;
  channel_id: string;
  guild_id?: string;
  author: FakeDiscordUser;
  content: string;
  embeds: FakeDiscordEmbed[];
  attachments: FakeDiscordAttachment[];
  timestamp: string;
  edited_timestamp: string | null;
  type: number;
  mentions: FakeDiscordUser[];
  message_reference?: { message_id: string; channel_id: string; guild_id?: string };
  flags: number;
  /** Action rows (buttons) as sent. */
  components: unknown[];
  /** Who the post notified, as Discord decides from `allowed_mentions` (user ids; `@everyone` for everyone/here). */
  pinged?: string[];
  /** Set when deleted through the API (the message stays in the store for assertions). */
  deleted?: boolean;
  /** Every content/embeds state it had, oldest first (the first is what was posted). */
  history: Array<{ content: string; embeds: FakeDiscordEmbed[] }>;
}

export interface FakeUploadedFile {
  field: string;
  filename: string;
  contentType: string;
  bytes: Buffer;
}

/** One HTTP request the fake answered (REST and CDN). */
export interface FakeDiscordCall {
  method: string;
  /** Path below /api/v10 for REST (`/channels/1/messages`), the full path for the CDN. */
  path: string;
  query: Record<string, string>;
  status: number;
  /** JSON body, or `payload_json` of a multipart body. */
  body?: any;
  files: FakeUploadedFile[];
  authorization?: string;
  at: number;
}

export interface FakeDiscordOptions {
  token?: string;
  bot?: { id?: string; username?: string };
  guild?: { id?: string; name?: string };
  /** Heartbeat interval sent in HELLO (default 41,250 ms as Discord; tests use ~1 s). */
  heartbeatIntervalMs?: number;
  /** On RESUME also replay this many events the client had already seen (default 0). */
  replayOverlap?: number;
  /** Largest file per upload (default 10 MiB, Discord's limit for bots in unboosted guilds). */
  uploadLimitBytes?: number;
  /** Starting a thread answers 403 Missing Permissions (default false). */
  denyThreads?: boolean;
}

/** A button click and what the bot answered to it (interaction callbacks). */
export interface FakeInteraction {
  id: string;
  token: string;
  customId: string;
  user: FakeDiscordUser;
  messageId: string;
  channelId: string;
  /** Callback bodies (`{type, data}`): 4 = reply (flags 64: ephemeral), 6 = deferred update, 7 = update the message. */
  responses: Array<{ type: number; data?: any }>;
}

export interface FakeRateLimitRule {
  method?: string;
  path?: RegExp;
  /** How many matching requests get a 429 (default 1). */
  count?: number;
  retryAfterSeconds?: number;
  global?: boolean;
}

export interface SayOptions {
  channelId: string;
  author: FakeDiscordUser;
  content: string;
  attachments?: Array<{ filename: string; bytes: Buffer | Uint8Array | string; contentType?: string; size?: number }>;
  /** Makes the message a reply to this message (type 19); the replied author is pinged unless `pingReplied: false`. */
  replyTo?: string;
  pingReplied?: boolean;
  /** Use this id instead of a fresh snowflake. */
  id?: string;
}

export interface FakeDiscord {
  /** `http://127.0.0.1:<port>/api`: what discord.js takes as `rest.api` (it appends /v10). */
  apiUrl: string;
  port: number;
  token: string;
  bot: FakeDiscordUser;
  guildId: string;
  /** Every REST/CDN request. */
  rest: CallRecorder<FakeDiscordCall>;
  /** Every gateway frame, both ways. */
  gateway: CallRecorder<FakeGatewayFrame>;
  addUser(username: string, opts?: { id?: string; globalName?: string; bot?: boolean }): FakeDiscordUser;
  /** A text channel in the guild (dispatched as CHANNEL_CREATE to connected sessions). */
  addTextChannel(name: string, opts?: { id?: string; type?: number }): FakeDiscordChannel;
  /** A public thread under `parentId`, as a person would start it (THREAD_CREATE). */
  addThread(parentId: string, name: string): FakeDiscordChannel;
  /** The DM channel between the bot and `user` (created on first use). */
  dmChannel(user: FakeDiscordUser): FakeDiscordChannel;
  channel(id: string): FakeDiscordChannel | undefined;
  /** A person posts a message: stored, and MESSAGE_CREATE dispatched. */
  say(opts: SayOptions): FakeDiscordMessage;
  /** Dispatches MESSAGE_CREATE of a stored message again (a duplicate delivery). */
  redeliver(messageId: string): void;
  message(id: string): FakeDiscordMessage | undefined;
  /** Messages of a channel, oldest first (deleted ones included, flagged). */
  messages(channelId: string): FakeDiscordMessage[];
  /** The bot's messages in a channel that are not deleted, oldest first. */
  botMessages(channelId: string): FakeDiscordMessage[];
  /** A person clicks a button on a message: INTERACTION_CREATE (message component) is dispatched. */
  click(messageId: string, customId: string, user: FakeDiscordUser): FakeInteraction;
  interaction(id: string): FakeInteraction | undefined;
  rateLimit(rule: FakeRateLimitRule): void;
  setDenyThreads(deny: boolean): void;
  /** Drops every gateway socket without a close frame; clients resume. */
  dropConnections(): void;
  closeConnections(code: number): void;
  /** Identified sessions that have an open socket. */
  readonly connectedSessions: number;
  /** Waits until `n` sessions are connected (identified or resumed). */
  waitForSessions(n?: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const randomToken = () => randomBytes(24).toString("base64url");

const DISCORD_EPOCH = 1420070400000n;
let increment = 0n;
/** A real-looking snowflake: ms since the Discord epoch, shifted, plus a counter. */
export function snowflake(at = Date.now()): string {
  increment = (increment + 1n) & 0xfffn;
  return (((BigInt(at) - DISCORD_EPOCH) << 22n) | (1n << 17n) | increment).toString();
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: object,
  ) {
    super(JSON.stringify(body));
  }
}
const invalidForm = (field: string, code: string, message: string) =>
  new HttpError(400, { message: "Invalid Form Body", code: 50035, errors: { [field]: { _errors: [{ code, message }] } } });
const unknown = (what: "Channel" | "Message" | "User", code: number) => new HttpError(404, { message: `Unknown ${what}`, code });

const EMBED_TOTAL = 6000;

function embedLength(e: FakeDiscordEmbed): number {
  let n = (e.title ?? "").length + (e.description ?? "").length + (e.footer?.text ?? "").length;
  for (const f of e.fields ?? []) n += f.name.length + f.value.length;
  return n;
}

function checkEmbeds(embeds: unknown): FakeDiscordEmbed[] {
  if (embeds === undefined || embeds === null) return [];
  if (!Array.isArray(embeds)) throw invalidForm("embeds", "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType");
  if (embeds.length > 10) throw invalidForm("embeds", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length.");
  let total = 0;
  for (const e of embeds as FakeDiscordEmbed[]) {
    if ((e.title ?? "").length > 256) throw invalidForm("embeds.title", "BASE_TYPE_MAX_LENGTH", "Must be 256 or fewer in length.");
    if ((e.description ?? "").length > 4096) throw invalidForm("embeds.description", "BASE_TYPE_MAX_LENGTH", "Must be 4096 or fewer in length.");
    if ((e.fields ?? []).length > 25) throw invalidForm("embeds.fields", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.");
    for (const f of e.fields ?? []) {
      if (!f.name || !f.value) throw invalidForm("embeds.fields", "BASE_TYPE_REQUIRED", "This field is required");
      if (f.name.length > 256 || f.value.length > 1024) throw invalidForm("embeds.fields", "BASE_TYPE_MAX_LENGTH", "Field too long.");
    }
    if ((e.footer?.text ?? "").length > 2048) throw invalidForm("embeds.footer.text", "BASE_TYPE_MAX_LENGTH", "Must be 2048 or fewer in length.");
    total += embedLength(e);
  }
  if (total > EMBED_TOTAL) throw invalidForm("embeds", "MAX_EMBED_SIZE_EXCEEDED", "Embed size exceeds maximum size of 6000");
  return embeds as FakeDiscordEmbed[];
}

function checkContent(content: unknown): string | undefined {
  if (content === undefined || content === null) return undefined;
  if (typeof content !== "string") throw invalidForm("content", "STRING_TYPE_CONVERT", "Could not interpret value as string.");
  if (content.length > 2000) throw invalidForm("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.");
  return content;
}

/** Action rows of buttons: at most 5 rows of 5, custom ids of at most 100 characters. */
function checkComponents(rows: unknown): unknown[] | undefined {
  if (rows === undefined || rows === null) return undefined;
  if (!Array.isArray(rows) || rows.length > 5) throw invalidForm("components", "BASE_TYPE_MAX_LENGTH", "Must be 5 or fewer in length.");
  for (const row of rows as Array<{ type?: number; components?: Array<{ type?: number; custom_id?: string; label?: string; style?: number; url?: string }> }>) {
    if (row.type !== 1 || !Array.isArray(row.components) || row.components.length === 0 || row.components.length > 5) {
      throw invalidForm("components", "COMPONENT_LAYOUT_WIDTH_EXCEEDED", "Invalid action row");
    }
    for (const c of row.components) {
      if (c.type !== 2) throw invalidForm("components", "COMPONENT_TYPE_INVALID", "Only buttons are supported by this fake");
      if (c.style === 5 ? !c.url : !c.custom_id || c.custom_id.length > 100) throw invalidForm("components.custom_id", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.");
      if ((c.label ?? "").length > 80) throw invalidForm("components.label", "BASE_TYPE_MAX_LENGTH", "Must be 80 or fewer in length.");
    }
  }
  return rows;
}

function userJson(u: FakeDiscordUser): FakeDiscordUser {
  return { ...u };
}

/** The message as the API and gateway show it (no test-only fields). */
function messageJson(m: FakeDiscordMessage): Record<string, unknown> {
  const { deleted: _d, history: _h, ...rest } = m;
  return {
    ...rest,
    attachments: m.attachments.map(({ bytes: _b, ...a }) => a),
    tts: false,
    mention_everyone: false,
    mention_roles: [],
    pinned: false,
  };
}

export async function startFakeDiscord(opts: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const token = opts.token ?? "fake-discord-token";
  const uploadLimit = opts.uploadLimitBytes ?? 10 * 1024 * 1024;
  let denyThreads = opts.denyThreads ?? false;
  const rest = new CallRecorder<FakeDiscordCall>();
  const users = new Map<string, FakeDiscordUser>();
  const channels = new Map<string, FakeDiscordChannel>();
  const messages = new Map<string, FakeDiscordMessage>();
  const files = new Map<string, FakeDiscordAttachment>();
  const rules: Array<FakeRateLimitRule & { left: number }> = [];
  const interactions = new Map<string, FakeInteraction>();
  const guildId = opts.guild?.id ?? snowflake();
  const guildName = opts.guild?.name ?? "Fake Guild";
  const guildCreatedAt = new Date().toISOString();
  let base = "";

  const makeUser = (username: string, o: { id?: string; globalName?: string; bot?: boolean } = {}): FakeDiscordUser => {
    const u: FakeDiscordUser = {
      id: o.id ?? snowflake(),
      username,
      global_name: o.globalName ?? null,
      discriminator: "0",
      avatar: null,
      public_flags: 0,
      ...(o.bot && { bot: true }),
    };
    users.set(u.id, u);
    return u;
  };
  const bot = makeUser(opts.bot?.username ?? "mom", { id: opts.bot?.id, bot: true });

  const memberJson = (u: FakeDiscordUser) => ({ user: userJson(u), roles: [], joined_at: guildCreatedAt, nick: null, deaf: false, mute: false, flags: 0 });
  const guildChannels = () => [...channels.values()].filter((c) => c.guild_id === guildId);
  const isThread = (c: FakeDiscordChannel) => c.type === DiscordChannelType.PublicThread || c.type === DiscordChannelType.PrivateThread || c.type === 10;

  const gateway = new FakeGateway(
    {
      token,
      readyPayload: () => ({ user: { ...userJson(bot), verified: true, mfa_enabled: false, flags: 0 }, guilds: [{ id: guildId }], application: { id: bot.id, flags: 0 } }),
      guildCreates: () => [
        {
          id: guildId,
          name: guildName,
          icon: null,
          owner_id: [...users.values()].find((u) => !u.bot)?.id ?? bot.id,
          unavailable: false,
          large: false,
          member_count: [...users.values()].length,
          joined_at: guildCreatedAt,
          features: [],
          roles: [
            { id: guildId, name: "@everyone", color: 0, hoist: false, position: 0, permissions: "1071698660929", managed: false, mentionable: false, flags: 0 },
          ],
          emojis: [],
          stickers: [],
          channels: guildChannels().filter((c) => !isThread(c)).map((c) => { const { guild_id: _g, ...rest } = c; return rest; }),
          threads: guildChannels().filter(isThread),
          members: [...users.values()].map(memberJson),
          presences: [],
          voice_states: [],
          stage_instances: [],
          guild_scheduled_events: [],
          premium_tier: 0,
          preferred_locale: "en-US",
          system_channel_id: null,
          afk_timeout: 300,
          verification_level: 0,
          default_message_notifications: 0,
          explicit_content_filter: 0,
          mfa_level: 0,
          nsfw_level: 0,
        },
      ],
    },
    { heartbeatIntervalMs: opts.heartbeatIntervalMs ?? 41_250, replayOverlap: opts.replayOverlap ?? 0 },
    () => `${base.replace(/^http/, "ws")}/gateway-resume`,
  );

  const addChannel = (c: FakeDiscordChannel, event?: string) => {
    channels.set(c.id, c);
    if (event) gateway.dispatch(event, c, (i) => (i & DiscordIntent.Guilds) !== 0);
    return c;
  };

  const fileUrl = (channelId: string, id: string, filename: string) => `${base}/attachments/${channelId}/${id}/${encodeURIComponent(filename)}`;
  const storeFile = (channelId: string, filename: string, bytes: Buffer, contentType?: string, size?: number): FakeDiscordAttachment => {
    const id = snowflake();
    const url = fileUrl(channelId, id, filename);
    const a: FakeDiscordAttachment = { id, filename, size: size ?? bytes.length, url, proxy_url: url, ...(contentType && { content_type: contentType }), bytes };
    files.set(id, a);
    return a;
  };

  /** MESSAGE_CREATE as a session with these intents sees it. */
  const dispatchMessage = (m: FakeDiscordMessage) => {
    const ch = channels.get(m.channel_id);
    const isDm = ch?.type === DiscordChannelType.DM;
    const payload: Record<string, unknown> = { ...messageJson(m), channel_type: ch?.type ?? 0, ...(m.guild_id && { member: { roles: [], joined_at: guildCreatedAt, nick: null, deaf: false, mute: false, flags: 0 } }) };
    payload.mentions = m.mentions.map((u) => ({ ...userJson(u), ...(m.guild_id && { member: { roles: [], joined_at: guildCreatedAt, nick: null } }) }));
    gateway.dispatch(
      "MESSAGE_CREATE",
      payload,
      (i) => (isDm ? (i & DiscordIntent.DirectMessages) !== 0 : (i & DiscordIntent.GuildMessages) !== 0),
      (i, d) => {
        const seesContent = (i & DiscordIntent.MessageContent) !== 0 || isDm || m.author.id === bot.id || m.mentions.some((u) => u.id === bot.id);
        return seesContent ? d : { ...(d as object), content: "", embeds: [], attachments: [], components: [] };
      },
    );
  };

  /** Discord's allowed_mentions: no field means everything parsed; `users: [ids]` limits user pings to those. */
  const pingedBy = (content: string, allowed: { parse?: string[]; users?: string[] } | undefined): string[] => {
    const parse = allowed ? (allowed.parse ?? []) : ["users", "roles", "everyone"];
    const out = [...content.matchAll(/<@!?(\d+)>/g)].map((m) => m[1]!).filter((id) => parse.includes("users") || (allowed?.users ?? []).includes(id));
    if (parse.includes("everyone") && /@(everyone|here)\b/.test(content)) out.push("@everyone");
    return [...new Set(out)];
  };

  const mentionsIn = (content: string): FakeDiscordUser[] => {
    const out: FakeDiscordUser[] = [];
    for (const m of content.matchAll(/<@!?(\d+)>/g)) {
      const u = users.get(m[1]!);
      if (u && !out.includes(u)) out.push(u);
    }
    return out;
  };

  const newMessage = (channelId: string, author: FakeDiscordUser, content: string, extra: Partial<FakeDiscordMessage> = {}): FakeDiscordMessage => {
    const ch = channels.get(channelId);
    const m: FakeDiscordMessage = {
      id: extra.id ?? snowflake(),
      channel_id: channelId,
      ...(ch?.guild_id && { guild_id: ch.guild_id }),
      author,
      content,
      embeds: extra.embeds ?? [],
      attachments: extra.attachments ?? [],
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      type: extra.message_reference ? 19 : 0,
      mentions: extra.mentions ?? mentionsIn(content),
      ...(extra.message_reference && { message_reference: extra.message_reference }),
      flags: 0,
      components: extra.components ?? [],
      history: [{ content, embeds: extra.embeds ?? [] }],
    };
    messages.set(m.id, m);
    if (ch) ch.last_message_id = m.id;
    return m;
  };

  // ---- REST ----------------------------------------------------------------------------------

  const requireChannel = (id: string) => {
    const c = channels.get(id);
    if (!c) throw unknown("Channel", 10003);
    return c;
  };
  const requireMessage = (channelId: string, id: string) => {
    const m = messages.get(id);
    if (!m || m.channel_id !== channelId || m.deleted) throw unknown("Message", 10008);
    return m;
  };

  const checkFiles = (up: FakeUploadedFile[]) => {
    if (up.length > 10) throw invalidForm("files", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length.");
    for (const f of up) if (f.bytes.length > uploadLimit) throw new HttpError(413, { message: "Request entity too large", code: 40005 });
  };

  const createMessage = (channelId: string, body: any, up: FakeUploadedFile[]) => {
    const ch = requireChannel(channelId);
    const content = checkContent(body?.content);
    const embeds = checkEmbeds(body?.embeds);
    checkFiles(up);
    if (!content && embeds.length === 0 && up.length === 0 && !body?.sticker_ids?.length) throw new HttpError(400, { message: "Cannot send an empty message", code: 50006 });
    let reference: FakeDiscordMessage["message_reference"];
    const ref = body?.message_reference;
    if (ref?.message_id) {
      const target = messages.get(String(ref.message_id));
      if (target && !target.deleted && target.channel_id === (ref.channel_id ?? channelId)) {
        reference = { message_id: target.id, channel_id: target.channel_id, ...(target.guild_id && { guild_id: target.guild_id }) };
      } else if (ref.fail_if_not_exists !== false) {
        throw invalidForm("message_reference", "REPLIES_UNKNOWN_MESSAGE", "Unknown message");
      }
    }
    const attachments = up.map((f) => storeFile(channelId, f.filename, f.bytes, f.contentType));
    const components = checkComponents(body?.components) ?? [];
    const m = newMessage(ch.id, bot, content ?? "", { embeds, attachments, components, ...(reference && { message_reference: reference }) });
    m.pinged = pingedBy(content ?? "", body?.allowed_mentions);
    dispatchMessage(m);
    return messageJson(m);
  };

  const editMessage = (channelId: string, id: string, body: any, up: FakeUploadedFile[]) => {
    requireChannel(channelId);
    const m = requireMessage(channelId, id);
    if (m.author.id !== bot.id) throw new HttpError(403, { message: "Cannot edit a message authored by another user", code: 50005 });
    const content = checkContent(body?.content);
    const embeds = body && "embeds" in body ? checkEmbeds(body.embeds) : undefined;
    checkFiles(up);
    const components = checkComponents(body?.components);
    if (content !== undefined) m.content = content;
    if (embeds !== undefined) m.embeds = embeds;
    if (components !== undefined) m.components = components;
    const added = up.map((f) => storeFile(channelId, f.filename, f.bytes, f.contentType));
    if (Array.isArray(body?.attachments)) {
      const keep = new Set(body.attachments.map((a: { id: unknown }) => String(a.id)));
      m.attachments = [...m.attachments.filter((a) => keep.has(a.id)), ...added];
    } else {
      m.attachments = [...m.attachments, ...added];
    }
    if (m.attachments.length > 10) throw invalidForm("attachments", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length.");
    if (!m.content && m.embeds.length === 0 && m.attachments.length === 0) throw new HttpError(400, { message: "Cannot send an empty message", code: 50006 });
    m.edited_timestamp = new Date().toISOString();
    m.history.push({ content: m.content, embeds: m.embeds });
    return messageJson(m);
  };

  const startThread = (channelId: string, messageId: string, body: any) => {
    const parent = requireChannel(channelId);
    const m = requireMessage(channelId, messageId);
    if (denyThreads) throw new HttpError(403, { message: "Missing Permissions", code: 50013 });
    if (parent.type !== DiscordChannelType.GuildText && parent.type !== DiscordChannelType.GuildAnnouncement) {
      throw new HttpError(400, { message: "Cannot execute action on this channel type", code: 50024 });
    }
    if (channels.has(m.id)) throw new HttpError(400, { message: "A thread has already been created for this message", code: 160004 });
    const name = String(body?.name ?? "");
    if (!name || name.length > 100) throw invalidForm("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.");
    const thread = threadJson(m.id, parent, name, bot.id);
    addChannel(thread, "THREAD_CREATE");
    return thread;
  };

  const threadJson = (id: string, parent: FakeDiscordChannel, name: string, ownerId: string): FakeDiscordChannel => ({
    id,
    type: DiscordChannelType.PublicThread,
    guild_id: guildId,
    parent_id: parent.id,
    owner_id: ownerId,
    name,
    last_message_id: null,
    message_count: 0,
    member_count: 1,
    rate_limit_per_user: 0,
    flags: 0,
    thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: new Date().toISOString(), locked: false },
  });

  const dmChannel = (user: FakeDiscordUser): FakeDiscordChannel => {
    const existing = [...channels.values()].find((c) => c.type === DiscordChannelType.DM && c.recipients?.[0]?.id === user.id);
    if (existing) return existing;
    return addChannel({ id: snowflake(), type: DiscordChannelType.DM, recipients: [userJson(user)], last_message_id: null, flags: 0 });
  };

  /** POST /interactions/:id/:token/callback: no bot token (the interaction token is the credential), answered once. */
  const interactionCallback = (id: string, tokenPart: string, body: any): [number, unknown] => {
    const i = interactions.get(id);
    if (!i || i.token !== tokenPart) throw new HttpError(404, { message: "Unknown interaction", code: 10062 });
    if (i.responses.length) throw new HttpError(400, { message: "Interaction has already been acknowledged.", code: 40060 });
    const type = Number(body?.type);
    if (![4, 5, 6, 7].includes(type)) throw invalidForm("type", "BASE_TYPE_CHOICES", "Value must be one of {4, 5, 6, 7}.");
    if (type === 4) checkContent(body?.data?.content);
    if (type === 7) {
      const m = requireMessage(i.channelId, i.messageId);
      const content = checkContent(body?.data?.content);
      const components = checkComponents(body?.data?.components);
      if (content !== undefined) m.content = content;
      if (components !== undefined) m.components = components;
      m.history.push({ content: m.content, embeds: m.embeds });
    }
    i.responses.push({ type, ...(body?.data && { data: body.data }) });
    return [204, undefined];
  };

  const route = async (method: string, path: string, body: any, up: FakeUploadedFile[]): Promise<[number, unknown]> => {
    let m: RegExpExecArray | null;
    if (method === "GET" && path === "/gateway/bot") {
      return [200, { url: `${base.replace(/^http/, "ws")}/gateway`, shards: 1, session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 } }];
    }
    if (method === "GET" && path === "/gateway") return [200, { url: `${base.replace(/^http/, "ws")}/gateway` }];
    if (method === "GET" && path === "/users/@me") return [200, userJson(bot)];
    if (method === "POST" && path === "/users/@me/channels") {
      const u = users.get(String(body?.recipient_id));
      if (!u) throw unknown("User", 10013);
      return [200, dmChannel(u)];
    }
    if (method === "GET" && (m = /^\/users\/(\d+)$/.exec(path))) {
      const u = users.get(m[1]!);
      if (!u) throw unknown("User", 10013);
      return [200, userJson(u)];
    }
    if ((m = /^\/channels\/(\d+)$/.exec(path))) {
      const c = requireChannel(m[1]!);
      if (method === "GET") return [200, c];
      if (method === "DELETE") {
        channels.delete(c.id);
        gateway.dispatch(isThread(c) ? "THREAD_DELETE" : "CHANNEL_DELETE", { id: c.id, type: c.type, guild_id: c.guild_id, parent_id: c.parent_id }, (i) => (i & DiscordIntent.Guilds) !== 0);
        return [200, c];
      }
    }
    if ((m = /^\/channels\/(\d+)\/messages$/.exec(path)) && method === "POST") return [200, createMessage(m[1]!, body, up)];
    if ((m = /^\/channels\/(\d+)\/typing$/.exec(path)) && method === "POST") {
      requireChannel(m[1]!);
      return [204, undefined];
    }
    if ((m = /^\/channels\/(\d+)\/messages\/(\d+)\/threads$/.exec(path)) && method === "POST") return [201, startThread(m[1]!, m[2]!, body)];
    if ((m = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path))) {
      const [, channelId, id] = m as unknown as [string, string, string];
      if (method === "GET") {
        requireChannel(channelId);
        return [200, messageJson(requireMessage(channelId, id))];
      }
      if (method === "PATCH") return [200, editMessage(channelId, id, body, up)];
      if (method === "DELETE") {
        requireChannel(channelId);
        const msg = requireMessage(channelId, id);
        msg.deleted = true;
        gateway.dispatch("MESSAGE_DELETE", { id, channel_id: channelId, ...(msg.guild_id && { guild_id: msg.guild_id }) });
        return [204, undefined];
      }
    }
    return [404, { message: "404: Not Found", code: 0 }];
  };

  const readBody = (req: IncomingMessage) =>
    new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => resolve(Buffer.concat(chunks)));
      req.on("error", reject);
    });

  const parseBody = async (req: IncomingMessage, raw: Buffer): Promise<{ body: any; files: FakeUploadedFile[] }> => {
    const type = req.headers["content-type"] ?? "";
    if (!raw.length) return { body: undefined, files: [] };
    if (type.startsWith("multipart/form-data")) {
      const form = await new Request("http://fake/", { method: "POST", headers: { "content-type": type }, body: raw }).formData();
      const up: FakeUploadedFile[] = [];
      let body: any;
      for (const [field, value] of form.entries()) {
        if (field === "payload_json") body = JSON.parse(String(value));
        else if (typeof value !== "string") {
          up.push({ field, filename: value.name, contentType: value.type, bytes: Buffer.from(await value.arrayBuffer()) });
        }
      }
      return { body, files: up };
    }
    return { body: JSON.parse(raw.toString("utf8")), files: [] };
  };

  const bucketOf = (method: string, path: string) => `${method}:${path.replace(/\d{15,}/g, (id, offset: number) => (offset < 12 ? id : ":id"))}`;

  const send = (res: ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { ...headers, ...(payload !== undefined && { "content-type": "application/json" }) });
    res.end(payload === undefined ? undefined : JSON.stringify(payload));
  };

  const serveFile = (req: IncomingMessage, res: ServerResponse, path: string) => {
    const m = /^\/attachments\/\d+\/(\d+)\//.exec(path);
    const f = m ? files.get(m[1]!) : undefined;
    rest.record({ method: req.method ?? "GET", path, query: {}, status: f ? 200 : 404, files: [], at: Date.now() });
    if (!f) return send(res, 404, { message: "404: Not Found", code: 0 });
    res.writeHead(200, { "content-type": f.content_type ?? "application/octet-stream", "content-length": String(f.bytes.length) });
    res.end(f.bytes);
  };

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://fake");
      const raw = await readBody(req);
      if (url.pathname.startsWith("/attachments/")) return serveFile(req, res, url.pathname);
      const method = req.method ?? "GET";
      if (!url.pathname.startsWith("/api/v10/")) {
        rest.record({ method, path: url.pathname, query: Object.fromEntries(url.searchParams), status: 404, files: [], at: Date.now() });
        return send(res, 404, { message: "404: Not Found", code: 0 });
      }
      const path = url.pathname.slice("/api/v10".length);
      const call: FakeDiscordCall = {
        method,
        path,
        query: Object.fromEntries(url.searchParams),
        status: 0,
        files: [],
        ...(req.headers.authorization && { authorization: req.headers.authorization }),
        at: Date.now(),
      };
      const bucket = bucketOf(method, path);
      const rlHeaders = {
        "x-ratelimit-limit": "5",
        "x-ratelimit-remaining": "4",
        "x-ratelimit-reset": String(Date.now() / 1000 + 1),
        "x-ratelimit-reset-after": "1",
        "x-ratelimit-bucket": Buffer.from(bucket).toString("hex").slice(0, 32),
      };
      try {
        const parsed = await parseBody(req, raw);
        if (parsed.body !== undefined) call.body = parsed.body;
        call.files = parsed.files;
        const cb = method === "POST" ? /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(path) : null;
        if (cb) {
          const [status, payload] = interactionCallback(cb[1]!, cb[2]!, parsed.body);
          call.status = status;
          rest.record(call);
          return send(res, status, payload, rlHeaders);
        }
        if (req.headers.authorization !== `Bot ${token}`) throw new HttpError(401, { message: "401: Unauthorized", code: 0 });
        const rule = rules.find((r) => r.left > 0 && (!r.method || r.method === method) && (!r.path || r.path.test(path)));
        if (rule) {
          rule.left--;
          const after = rule.retryAfterSeconds ?? 0.2;
          call.status = 429;
          rest.record(call);
          return send(
            res,
            429,
            { message: "You are being rate limited.", retry_after: after, global: rule.global ?? false },
            {
              ...rlHeaders,
              "x-ratelimit-remaining": "0",
              "x-ratelimit-reset-after": String(after),
              "retry-after": String(after),
              ...(rule.global ? { "x-ratelimit-global": "true", "x-ratelimit-scope": "global" } : { "x-ratelimit-scope": "user" }),
            },
          );
        }
        const [status, payload] = await route(method, path, parsed.body, parsed.files);
        call.status = status;
        rest.record(call);
        send(res, status, payload, rlHeaders);
      } catch (err) {
        const e = err instanceof HttpError ? err : new HttpError(500, { message: String((err as Error)?.message ?? err), code: 0 });
        call.status = e.status;
        rest.record(call);
        send(res, e.status, e.body, rlHeaders);
      }
    })();
  });
  server.on("upgrade", (req, socket, head) => {
    const path = new URL(req.url ?? "/", "http://fake").pathname;
    if (path === "/gateway" || path === "/gateway-resume") gateway.handleUpgrade(req, socket, head);
    else socket.destroy();
  });
  const sockets = new Set<Socket>();
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  base = `http://127.0.0.1:${port}`;

  const fake: FakeDiscord = {
    apiUrl: `${base}/api`,
    port,
    token,
    bot,
    guildId,
    rest,
    gateway: gateway.frames,
    addUser: (username, o) => {
      const u = makeUser(username, o);
      gateway.dispatch("GUILD_MEMBER_ADD", { guild_id: guildId, ...memberJson(u) }, (i) => (i & DiscordIntent.GuildMembers) !== 0);
      return u;
    },
    addTextChannel: (name, o = {}) =>
      addChannel(
        { id: o.id ?? snowflake(), type: o.type ?? DiscordChannelType.GuildText, guild_id: guildId, name, position: channels.size, parent_id: null, permission_overwrites: [], nsfw: false, topic: null, last_message_id: null, rate_limit_per_user: 0, flags: 0 },
        "CHANNEL_CREATE",
      ),
    addThread: (parentId, name) => {
      const parent = requireChannel(parentId);
      return addChannel(threadJson(snowflake(), parent, name, [...users.values()].find((u) => !u.bot)?.id ?? bot.id), "THREAD_CREATE");
    },
    dmChannel,
    channel: (id) => channels.get(id),
    say: (o) => {
      const ch = channels.get(o.channelId);
      if (!ch) throw new Error(`fake discord: no channel ${o.channelId}`);
      let reference: FakeDiscordMessage["message_reference"];
      const mentions = mentionsIn(o.content);
      if (o.replyTo) {
        const target = messages.get(o.replyTo);
        if (!target) throw new Error(`fake discord: no message ${o.replyTo} to reply to`);
        reference = { message_id: target.id, channel_id: target.channel_id, ...(target.guild_id && { guild_id: target.guild_id }) };
        if (o.pingReplied !== false && !mentions.includes(target.author)) mentions.push(target.author);
      }
      const attachments = (o.attachments ?? []).map((a) => storeFile(ch.id, a.filename, Buffer.from(a.bytes), a.contentType, a.size));
      const m = newMessage(ch.id, o.author, o.content, { mentions, attachments, ...(o.id && { id: o.id }), ...(reference && { message_reference: reference }) });
      dispatchMessage(m);
      return m;
    },
    redeliver: (id) => {
      const m = messages.get(id);
      if (!m) throw new Error(`fake discord: no message ${id} to deliver again`);
      dispatchMessage(m);
    },
    message: (id) => messages.get(id),
    messages: (channelId) => [...messages.values()].filter((m) => m.channel_id === channelId),
    botMessages: (channelId) => [...messages.values()].filter((m) => m.channel_id === channelId && m.author.id === bot.id && !m.deleted),
    click: (messageId, customId, user) => {
      const m = messages.get(messageId);
      if (!m || m.deleted) throw new Error(`fake discord: no message ${messageId} to click on`);
      const ch = channels.get(m.channel_id);
      const i: FakeInteraction = { id: snowflake(), token: `tok-${randomToken()}`, customId, user, messageId, channelId: m.channel_id, responses: [] };
      interactions.set(i.id, i);
      const inGuild = Boolean(m.guild_id);
      gateway.dispatch("INTERACTION_CREATE", {
        id: i.id,
        application_id: bot.id,
        type: 3,
        token: i.token,
        version: 1,
        data: { custom_id: customId, component_type: 2 },
        channel_id: m.channel_id,
        channel: ch,
        ...(inGuild ? { guild_id: m.guild_id, member: { ...memberJson(user), permissions: "1071698660929" }, guild_locale: "en-US" } : { user: userJson(user) }),
        message: messageJson(m),
        app_permissions: "1071698660929",
        locale: "en-US",
        entitlements: [],
        authorizing_integration_owners: inGuild ? { "0": m.guild_id } : { "1": user.id },
        context: inGuild ? 0 : 1,
        attachment_size_limit: uploadLimit,
      });
      return i;
    },
    interaction: (id) => interactions.get(id),
    rateLimit: (rule) => void rules.push({ ...rule, left: rule.count ?? 1 }),
    setDenyThreads: (deny) => void (denyThreads = deny),
    dropConnections: () => gateway.dropConnections(),
    closeConnections: (code) => gateway.closeConnections(code),
    get connectedSessions() {
      return gateway.connectedSessions;
    },
    async waitForSessions(n = 1, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (gateway.connectedSessions < n) {
        if (Date.now() > deadline) throw new Error(`fake discord: ${gateway.connectedSessions} session(s) connected after ${timeoutMs} ms, wanted ${n}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async close() {
      await gateway.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  return fake;
}
