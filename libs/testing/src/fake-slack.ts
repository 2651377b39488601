// A fake Slack workspace on loopback that speaks the real protocols, for `@slack/bolt` (Socket
// Mode) and `@slack/web-api` pointed at it with `slackApiUrl`:
//
// Web API: `POST <apiUrl><method>` with a form-urlencoded, JSON or multipart body and the token in
// `Authorization: Bearer …` (or a `token` field); answers `{ok: true, …}` or `{ok: false, error}`
// with HTTP 200, and HTTP 429 + `Retry-After` when a test rate-limits a method. Methods:
// auth.test, users.list, users.info, conversations.list, conversations.history,
// conversations.replies, conversations.members (a DM's user and the bot, a channel's `members`
// plus everyone who posted there, `setMember`), chat.postMessage, chat.update, chat.delete, chat.postEphemeral, reactions.add,
// reactions.remove, files.getUploadURLExternal, files.completeUploadExternal (the upload itself is
// a POST to the returned upload_url), apps.connections.open (app-level token only). Files users
// share are served at their `url_private_download` to requests carrying the bot token.
//
// Socket Mode: apps.connections.open hands out `ws://…/link/?ticket=…`; on connect the server
// sends `hello`, then `events_api` envelopes; the client acks with `{envelope_id}`. Events for a
// workspace with no connection wait until one connects (Slack retries them). Tests can drop the
// socket, send `disconnect`, redeliver an envelope with `retry_attempt`, and click a message's
// Block Kit button (`interactive` envelope with a `block_actions` payload).
//
// Posting a user message (`userMessage`) stores it in the channel history and emits what Slack
// emits: `message` (with `channel_type`), plus `app_mention` when it mentions the bot outside a
// DM. The bot's own posts are echoed as `message` events with its `bot_id`, as Slack does.
// Everything is recorded so tests assert on what Slack would have seen.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";
import { CallRecorder } from "./call-recorder.js";

export interface FakeSlackUser {
  id: string;
  name: string;
  real_name?: string;
  display_name?: string;
  is_bot?: boolean;
  deleted?: boolean;
}

export interface FakeSlackChannel {
  id: string;
  name?: string;
  is_im?: boolean;
  is_mpim?: boolean;
  is_private?: boolean;
  /** The other user of a DM. */
  user?: string;
  /** Who is in the channel from the start (besides the bot); whoever posts there joins. */
  members?: string[];
}

export interface FakeSlackFile {
  id: string;
  name: string;
  title: string;
  mimetype: string;
  filetype: string;
  size: number;
  url_private: string;
  url_private_download: string;
  mode: string;
}

export interface FakeSlackMessage {
  channel: string;
  ts: string;
  text: string;
  user?: string;
  bot_id?: string;
  thread_ts?: string;
  subtype?: string;
  files?: FakeSlackFile[];
  /** Block Kit blocks of the message, as last set (chat.postMessage / chat.update). */
  blocks?: Array<Record<string, any>>;
  reactions: string[];
  /** Every text this message had, first to last (chat.update appends). */
  versions: string[];
  deleted: boolean;
}

export interface FakeSlackCall {
  method: string;
  args: Record<string, unknown>;
  /** "bot", "app" or "none"/"other" — which token the call carried. */
  token: "bot" | "app" | "none" | "other";
  /** HTTP status answered (429 when rate-limited). */
  status: number;
  /** Slack error code when `ok: false`. */
  error?: string;
  at: number;
}

export interface FakeSlackEnvelope {
  envelope_id: string;
  type: "events_api" | "interactive";
  accepts_response_payload: boolean;
  retry_attempt: number;
  retry_reason: string;
  payload: { type: string; [k: string]: unknown };
}

export interface FakeSlackEphemeral {
  channel: string;
  user: string;
  text: string;
  threadTs?: string;
  at: number;
}

export interface FakeSlackUpload {
  fileId: string;
  filename: string;
  bytes: Buffer;
  title?: string;
  channel?: string;
  threadTs?: string;
  initialComment?: string;
}

export interface FakeSlackOptions {
  botToken?: string;
  appToken?: string;
  users?: FakeSlackUser[];
  channels?: FakeSlackChannel[];
  /** Longest text chat.postMessage / chat.update accept (Slack: 40,000); longer is `msg_too_long`. */
  maxTextLength?: number;
  /** Echo the bot's own posts as `message` events (Slack does). Default true. */
  echoBotMessages?: boolean;
}

export interface UserMessageOptions {
  channel: string;
  user: string;
  text: string;
  thread_ts?: string;
  files?: FakeSlackFile[];
  /** false: only store it in the history (a message sent while the app was offline). Default true. */
  deliver?: boolean;
}

export interface FakeSlack {
  /** `http://127.0.0.1:<port>/api/` — the `slackApiUrl` / config `apiUrl`. */
  apiUrl: string;
  port: number;
  botToken: string;
  appToken: string;
  teamId: string;
  appId: string;
  botUserId: string;
  botId: string;
  /** Every Web API call, in arrival order. */
  calls: CallRecorder<FakeSlackCall>;
  /** Every envelope sent over Socket Mode (redeliveries included). */
  envelopes: CallRecorder<FakeSlackEnvelope>;
  /** Every ack received: `{envelope_id, payload}`. */
  acks: CallRecorder<{ envelope_id: string; payload?: unknown; at: number }>;
  /** Every Socket Mode connection opened (hello sent). */
  connections: CallRecorder<{ at: number }>;
  uploads: FakeSlackUpload[];
  /** Messages only one person saw (chat.postEphemeral). */
  ephemerals: CallRecorder<FakeSlackEphemeral>;
  addUser(u: FakeSlackUser): void;
  addChannel(c: FakeSlackChannel): void;
  /** `user` joins (true) or leaves (false) `channel`: what conversations.members lists. */
  setMember(channel: string, user: string, member: boolean): void;
  /** A file a user shares; put it in `userMessage({files})`. */
  addFile(f: { name: string; bytes: Uint8Array; mimetype?: string; title?: string }): FakeSlackFile;
  /** A person posts in a channel: stored in the history and (unless deliver: false) sent as events. */
  userMessage(m: UserMessageOptions): { ts: string; envelopes: FakeSlackEnvelope[] };
  /** Sends an events_api envelope (queued until a socket is connected). */
  sendEvent(event: Record<string, unknown>): FakeSlackEnvelope;
  /** Sends an envelope again, as Slack does when it thinks it was not acked. */
  redeliver(envelope: FakeSlackEnvelope, reason?: string): FakeSlackEnvelope;
  waitForAck(envelopeId: string, timeoutMs?: number): Promise<void>;
  /** A person clicks a button (by action_id) of a message: an `interactive` block_actions envelope. */
  clickButton(o: { channel: string; ts: string; user: string; actionId: string }): FakeSlackEnvelope;
  /** Kills every Socket Mode connection without a close handshake. */
  dropSockets(): void;
  /** Sends `{type: "disconnect"}` on every connection (Slack refreshing its servers). */
  sendDisconnect(reason?: string): void;
  openSockets(): number;
  /** The next `times` calls of `method` get HTTP 429 with `Retry-After: retryAfterSeconds`. */
  rateLimit(method: string, times: number, retryAfterSeconds: number): void;
  /** Messages of a channel (deleted ones left out), oldest first; `thread` picks one thread's replies. */
  messages(channel: string, opts?: { thread?: string; includeDeleted?: boolean }): FakeSlackMessage[];
  message(channel: string, ts: string): FakeSlackMessage | undefined;
  /** Resolves once `pred` holds over the messages of `channel` (checked after every API call). */
  waitForMessages(channel: string, pred: (msgs: FakeSlackMessage[]) => boolean, timeoutMs?: number): Promise<FakeSlackMessage[]>;
  close(): Promise<void>;
}

const DEFAULT_USERS: FakeSlackUser[] = [
  { id: "U0ALICE", name: "alice", real_name: "Alice Archer", display_name: "Alice" },
  { id: "U0BOB", name: "bob", real_name: "Bob Baker", display_name: "bob" },
];
const DEFAULT_CHANNELS: FakeSlackChannel[] = [
  { id: "C0GENERAL", name: "general" },
  { id: "C0RANDOM", name: "random" },
  { id: "D0ALICE", is_im: true, user: "U0ALICE" },
  { id: "D0BOB", is_im: true, user: "U0BOB" },
];

type Handler = (args: Record<string, any>, token: FakeSlackCall["token"]) => Record<string, unknown> | Promise<Record<string, unknown>>;

class SlackError extends Error {
  constructor(readonly code: string) {
    super(code);
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function parseArgs(req: IncomingMessage, body: Buffer): Promise<Record<string, any>> {
  const type = String(req.headers["content-type"] ?? "");
  if (type.startsWith("application/json")) return body.length ? JSON.parse(body.toString("utf8")) : {};
  if (type.startsWith("multipart/form-data")) {
    const form = await new Response(body, { headers: { "content-type": type } }).formData();
    const out: Record<string, any> = {};
    for (const [k, v] of form.entries()) out[k] = typeof v === "string" ? v : Buffer.from(await v.arrayBuffer());
    return out;
  }
  return Object.fromEntries(new URLSearchParams(body.toString("utf8")));
}

const json = (v: unknown): any => {
  if (typeof v !== "string") return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
};

export async function startFakeSlack(opts: FakeSlackOptions = {}): Promise<FakeSlack> {
  const botToken = opts.botToken ?? "xoxb-fake-bot-token";
  const appToken = opts.appToken ?? "xapp-fake-app-token";
  const teamId = "T0FAKE";
  const appId = "A0MOM";
  const botUserId = "U0MOMBOT";
  const botId = "B0MOMBOT";
  const maxText = opts.maxTextLength ?? 40_000;
  const echo = opts.echoBotMessages ?? true;

  const users = new Map<string, FakeSlackUser>();
  const channels = new Map<string, FakeSlackChannel>();
  const history = new Map<string, FakeSlackMessage[]>();
  const files = new Map<string, { file: FakeSlackFile; bytes: Buffer }>();
  const pendingUploads = new Map<string, { filename: string; length: number; bytes?: Buffer }>();
  const tickets = new Set<string>();
  const limits = new Map<string, { times: number; retryAfter: number }>();
  const sockets = new Set<WebSocket>();
  const undelivered: FakeSlackEnvelope[] = [];
  const msgWaiters = new Set<() => void>();
  const calls = new CallRecorder<FakeSlackCall>();
  const envelopes = new CallRecorder<FakeSlackEnvelope>();
  const acks = new CallRecorder<{ envelope_id: string; payload?: unknown; at: number }>();
  const connections = new CallRecorder<{ at: number }>();
  const uploads: FakeSlackUpload[] = [];
  const ephemerals = new CallRecorder<FakeSlackEphemeral>();
  let lastMicros = 0;
  let idSeq = 0;

  const addUser = (u: FakeSlackUser) => void users.set(u.id, u);
  const members = new Map<string, Set<string>>();
  const addChannel = (c: FakeSlackChannel) => {
    channels.set(c.id, c);
    if (!history.has(c.id)) history.set(c.id, []);
    if (!members.has(c.id)) members.set(c.id, new Set([botUserId, ...(c.user ? [c.user] : []), ...(c.members ?? [])]));
  };
  const setMember = (channel: string, user: string, member: boolean) => void (member ? members.get(channel)?.add(user) : members.get(channel)?.delete(user));
  addUser({ id: botUserId, name: "mom", real_name: "mom", display_name: "mom", is_bot: true });
  for (const u of opts.users ?? DEFAULT_USERS) addUser(u);
  for (const c of opts.channels ?? DEFAULT_CHANNELS) addChannel(c);

  const nextTs = () => {
    lastMicros = Math.max(lastMicros + 1, Date.now() * 1000);
    return `${Math.floor(lastMicros / 1e6)}.${String(lastMicros % 1e6).padStart(6, "0")}`;
  };
  const nextId = (prefix: string) => `${prefix}0${(++idSeq).toString(36).toUpperCase().padStart(6, "0")}`;
  const notifyMessages = () => {
    for (const w of [...msgWaiters]) w();
  };

  const channelOf = (id: unknown): FakeSlackChannel => {
    const c = channels.get(String(id ?? ""));
    if (!c) throw new SlackError("channel_not_found");
    return c;
  };
  const channelType = (c: FakeSlackChannel) => (c.is_im ? "im" : c.is_mpim ? "mpim" : c.is_private ? "group" : "channel");
  const findMessage = (channel: string, ts: unknown) => history.get(channel)?.find((m) => m.ts === String(ts) && !m.deleted);
  const userJson = (u: FakeSlackUser) => ({
    id: u.id,
    team_id: teamId,
    name: u.name,
    deleted: u.deleted ?? false,
    real_name: u.real_name ?? u.name,
    is_bot: u.is_bot ?? false,
    is_app_user: false,
    profile: { real_name: u.real_name ?? u.name, display_name: u.display_name ?? "" },
  });
  const channelJson = (c: FakeSlackChannel) =>
    c.is_im
      ? { id: c.id, is_im: true, user: c.user, is_org_shared: false }
      : { id: c.id, name: c.name, is_channel: !c.is_private && !c.is_mpim, is_group: !!c.is_private, is_mpim: !!c.is_mpim, is_private: !!c.is_private, is_member: true, is_archived: false };
  const messageJson = (m: FakeSlackMessage) => {
    const replies = m.thread_ts === undefined ? [] : (history.get(m.channel) ?? []).filter((r) => r.thread_ts === m.ts && r.ts !== m.ts && !r.deleted);
    return {
      type: "message",
      ts: m.ts,
      text: m.text,
      ...(m.user && { user: m.user }),
      ...(m.bot_id && { bot_id: m.bot_id }),
      ...(m.subtype && { subtype: m.subtype }),
      ...(m.thread_ts && { thread_ts: m.thread_ts }),
      ...(m.thread_ts === m.ts && { reply_count: replies.length, latest_reply: replies.at(-1)?.ts ?? m.ts }),
      ...(m.files && { files: m.files }),
      ...(m.blocks && { blocks: m.blocks }),
      ...(m.versions.length > 1 && { edited: { user: m.user, ts: m.ts } }),
    };
  };

  const store = (m: Omit<FakeSlackMessage, "reactions" | "versions" | "deleted">): FakeSlackMessage => {
    const msg: FakeSlackMessage = { ...m, reactions: [], versions: [m.text], deleted: false };
    if (m.thread_ts && m.thread_ts !== m.ts) {
      const parent = findMessage(m.channel, m.thread_ts);
      if (parent && parent.thread_ts === undefined) parent.thread_ts = parent.ts;
    }
    history.get(m.channel)!.push(msg);
    notifyMessages();
    return msg;
  };

  // --- Socket Mode -------------------------------------------------------------------------------
  const transmit = (env: FakeSlackEnvelope) => {
    const open = [...sockets].filter((s) => s.readyState === WebSocket.OPEN);
    if (open.length === 0) {
      undelivered.push(env);
      return;
    }
    envelopes.record(env);
    open[Math.floor(Math.random() * open.length)]!.send(JSON.stringify(env));
  };
  const envelopeFor = (event: Record<string, unknown>): FakeSlackEnvelope => ({
    envelope_id: randomUUID(),
    type: "events_api",
    accepts_response_payload: false,
    retry_attempt: 0,
    retry_reason: "",
    payload: {
      token: "fake-verification-token",
      team_id: teamId,
      context_team_id: teamId,
      api_app_id: appId,
      event: { ...event, event_ts: event.event_ts ?? event.ts ?? `${Date.now() / 1000}` },
      type: "event_callback",
      event_id: nextId("Ev"),
      event_time: Math.floor(Date.now() / 1000),
      authorizations: [{ enterprise_id: null, team_id: teamId, user_id: botUserId, is_bot: true, is_enterprise_install: false }],
      is_ext_shared_channel: false,
    },
  });
  const sendEvent = (event: Record<string, unknown>) => {
    const env = envelopeFor(event);
    transmit(env);
    return env;
  };

  const wss = new WebSocketServer({ noServer: true });
  wss.on("connection", (ws) => {
    sockets.add(ws);
    ws.on("close", () => sockets.delete(ws));
    ws.on("message", (data) => {
      try {
        const msg = JSON.parse(data.toString());
        if (msg.envelope_id) acks.record({ envelope_id: msg.envelope_id, payload: msg.payload, at: Date.now() });
      } catch {
        // not JSON: ignored, like Slack
      }
    });
    ws.send(JSON.stringify({ type: "hello", num_connections: sockets.size, debug_info: { host: "fake-slack", approximate_connection_time: 18060 }, connection_info: { app_id: appId } }));
    connections.record({ at: Date.now() });
    for (const env of undelivered.splice(0)) transmit(env);
  });

  // --- Web API -----------------------------------------------------------------------------------
  const requireBot = (token: FakeSlackCall["token"]) => {
    if (token === "none") throw new SlackError("not_authed");
    if (token === "app") throw new SlackError("not_allowed_token_type");
    if (token !== "bot") throw new SlackError("invalid_auth");
  };
  const page = <T>(items: T[], args: Record<string, any>, defaultLimit: number) => {
    const limit = Math.max(1, Math.min(Number(args.limit) || defaultLimit, 1000));
    const start = args.cursor ? Number(Buffer.from(String(args.cursor), "base64").toString().replace(/^offset:/, "")) : 0;
    const slice = items.slice(start, start + limit);
    const next = start + limit < items.length ? Buffer.from(`offset:${start + limit}`).toString("base64") : "";
    return { slice, next };
  };
  const checkText = (text: unknown) => {
    if (typeof text !== "string" || text === "") throw new SlackError("no_text");
    if (text.length > maxText) throw new SlackError("msg_too_long");
  };
  /** Block Kit as Slack checks it: at most 50 blocks, a section's text at most 3,000 characters. */
  const checkBlocks = (blocks: unknown) => {
    if (!Array.isArray(blocks) || blocks.length > 50) throw new SlackError("invalid_blocks");
    for (const b of blocks as Array<{ type?: string; text?: { text?: unknown } }>) {
      if (b?.type === "section" && (typeof b.text?.text !== "string" || b.text.text.length > 3000)) throw new SlackError("invalid_blocks");
    }
  };
  const botPost = (m: Omit<FakeSlackMessage, "reactions" | "versions" | "deleted">) => {
    const msg = store(m);
    const c = channels.get(m.channel)!;
    if (echo) {
      sendEvent({
        type: "message",
        ...(m.subtype && { subtype: m.subtype }),
        channel: m.channel,
        channel_type: channelType(c),
        user: botUserId,
        bot_id: botId,
        text: m.text,
        ts: m.ts,
        ...(m.thread_ts && { thread_ts: m.thread_ts }),
        ...(m.files && { files: m.files }),
      });
    }
    return msg;
  };

  const methods: Record<string, Handler> = {
    "auth.test": (_a, token) => {
      requireBot(token);
      return { url: "https://fake.slack.test/", team: "Fake Team", user: "mom", team_id: teamId, user_id: botUserId, bot_id: botId, is_enterprise_install: false };
    },
    "apps.connections.open": (_a, token) => {
      if (token === "bot") throw new SlackError("not_allowed_token_type");
      if (token !== "app") throw new SlackError("invalid_auth");
      const ticket = randomUUID();
      tickets.add(ticket);
      return { url: `ws://127.0.0.1:${port}/link/?ticket=${ticket}&app_id=${appId}` };
    },
    "users.list": (a, token) => {
      requireBot(token);
      const { slice, next } = page([...users.values()], a, 100);
      return { members: slice.map(userJson), cache_ts: Math.floor(Date.now() / 1000), response_metadata: { next_cursor: next } };
    },
    "users.info": (a, token) => {
      requireBot(token);
      const u = users.get(String(a.user));
      if (!u) throw new SlackError("user_not_found");
      return { user: userJson(u) };
    },
    "conversations.list": (a, token) => {
      requireBot(token);
      const types = String(a.types ?? "public_channel").split(",");
      const wanted = [...channels.values()].filter((c) =>
        types.includes(c.is_im ? "im" : c.is_mpim ? "mpim" : c.is_private ? "private_channel" : "public_channel"),
      );
      const { slice, next } = page(wanted, a, 100);
      return { channels: slice.map(channelJson), response_metadata: { next_cursor: next } };
    },
    "conversations.members": (a, token) => {
      requireBot(token);
      const c = channelOf(a.channel);
      const { slice, next } = page([...(members.get(c.id) ?? [])], a, 100);
      return { members: slice, response_metadata: { next_cursor: next } };
    },
    "conversations.history": (a, token) => {
      requireBot(token);
      const c = channelOf(a.channel);
      const inclusive = a.inclusive === true || a.inclusive === "true" || a.inclusive === "1";
      const oldest = a.oldest !== undefined ? Number(a.oldest) : 0;
      const latest = a.latest !== undefined ? Number(a.latest) : Infinity;
      const msgs = (history.get(c.id) ?? [])
        .filter((m) => !m.deleted && (m.thread_ts === undefined || m.thread_ts === m.ts || m.subtype === "thread_broadcast"))
        .filter((m) => {
          const t = Number(m.ts);
          return (inclusive ? t >= oldest : t > oldest) && (inclusive ? t <= latest : t < latest);
        })
        .sort((x, y) => Number(y.ts) - Number(x.ts));
      const { slice, next } = page(msgs, a, 100);
      return { messages: slice.map(messageJson), has_more: next !== "", pin_count: 0, response_metadata: { next_cursor: next } };
    },
    "conversations.replies": (a, token) => {
      requireBot(token);
      const c = channelOf(a.channel);
      const parent = findMessage(c.id, a.ts);
      if (!parent) throw new SlackError("thread_not_found");
      const oldest = a.oldest !== undefined ? Number(a.oldest) : 0;
      const msgs = (history.get(c.id) ?? []).filter((m) => !m.deleted && (m.ts === parent.ts || m.thread_ts === parent.ts)).filter((m) => m.ts === parent.ts || Number(m.ts) > oldest);
      const { slice, next } = page(msgs, a, 100);
      return { messages: slice.map(messageJson), has_more: next !== "", response_metadata: { next_cursor: next } };
    },
    "chat.postMessage": (a, token) => {
      requireBot(token);
      const c = channelOf(a.channel);
      checkText(a.text);
      if (a.thread_ts !== undefined && !findMessage(c.id, a.thread_ts)) throw new SlackError("thread_not_found");
      const blocks = a.blocks !== undefined ? json(a.blocks) : undefined;
      if (blocks !== undefined) checkBlocks(blocks);
      const msg = botPost({ channel: c.id, ts: nextTs(), text: String(a.text), user: botUserId, bot_id: botId, ...(a.thread_ts && { thread_ts: String(a.thread_ts) }), ...(blocks && { blocks }) });
      return { channel: c.id, ts: msg.ts, message: { ...messageJson(msg), team: teamId } };
    },
    "chat.update": (a, token) => {
      requireBot(token);
      const c = channelOf(a.channel);
      const msg = findMessage(c.id, a.ts);
      if (!msg) throw new SlackError("message_not_found");
      if (msg.user !== botUserId) throw new SlackError("cant_update_message");
      checkText(a.text);
      if (a.blocks !== undefined) {
        const blocks = json(a.blocks);
        checkBlocks(blocks);
        msg.blocks = blocks;
      }
      msg.text = String(a.text);
      msg.versions.push(msg.text);
      notifyMessages();
      return { channel: c.id, ts: msg.ts, text: msg.text, message: messageJson(msg) };
    },
    "chat.delete": (a, token) => {
      requireBot(token);
      const c = channelOf(a.channel);
      const msg = findMessage(c.id, a.ts);
      if (!msg) throw new SlackError("message_not_found");
      if (msg.user !== botUserId) throw new SlackError("cant_delete_message");
      msg.deleted = true;
      notifyMessages();
      return { channel: c.id, ts: msg.ts };
    },
    "chat.postEphemeral": (a, token) => {
      requireBot(token);
      const c = channelOf(a.channel);
      checkText(a.text);
      if (!users.has(String(a.user))) throw new SlackError("user_not_found");
      ephemerals.record({ channel: c.id, user: String(a.user), text: String(a.text), ...(a.thread_ts && { threadTs: String(a.thread_ts) }), at: Date.now() });
      return { message_ts: nextTs() };
    },
    "reactions.add": (a, token) => {
      requireBot(token);
      const c = channelOf(a.channel);
      const msg = findMessage(c.id, a.timestamp);
      if (!msg) throw new SlackError("message_not_found");
      if (msg.reactions.includes(String(a.name))) throw new SlackError("already_reacted");
      msg.reactions.push(String(a.name));
      notifyMessages();
      return {};
    },
    "reactions.remove": (a, token) => {
      requireBot(token);
      const c = channelOf(a.channel);
      const msg = findMessage(c.id, a.timestamp);
      if (!msg) throw new SlackError("message_not_found");
      const i = msg.reactions.indexOf(String(a.name));
      if (i < 0) throw new SlackError("no_reaction");
      msg.reactions.splice(i, 1);
      notifyMessages();
      return {};
    },
    "files.getUploadURLExternal": (a, token) => {
      requireBot(token);
      if (!a.filename) throw new SlackError("invalid_arguments");
      const length = Number(a.length);
      if (!Number.isInteger(length) || length < 0) throw new SlackError("invalid_arguments");
      const fileId = nextId("F");
      pendingUploads.set(fileId, { filename: String(a.filename), length });
      return { upload_url: `http://127.0.0.1:${port}/upload/v1/${fileId}`, file_id: fileId };
    },
    "files.completeUploadExternal": (a, token) => {
      requireBot(token);
      const list = json(a.files);
      if (!Array.isArray(list) || list.length === 0) throw new SlackError("invalid_arguments");
      const channel = a.channel_id !== undefined ? channelOf(a.channel_id).id : undefined;
      if (a.thread_ts !== undefined && channel && !findMessage(channel, a.thread_ts)) throw new SlackError("thread_not_found");
      const done: FakeSlackFile[] = [];
      for (const entry of list as Array<{ id: string; title?: string }>) {
        const up = pendingUploads.get(entry.id);
        if (!up || !up.bytes) throw new SlackError("file_not_found");
        pendingUploads.delete(entry.id);
        const file = fileJson(entry.id, up.filename, up.bytes, guessType(up.filename), entry.title ?? up.filename);
        files.set(entry.id, { file, bytes: up.bytes });
        uploads.push({
          fileId: entry.id,
          filename: up.filename,
          bytes: up.bytes,
          ...(entry.title && { title: entry.title }),
          ...(channel && { channel }),
          ...(a.thread_ts && { threadTs: String(a.thread_ts) }),
          ...(a.initial_comment && { initialComment: String(a.initial_comment) }),
        });
        done.push(file);
      }
      if (channel) {
        botPost({ channel, ts: nextTs(), text: a.initial_comment ? String(a.initial_comment) : "", user: botUserId, bot_id: botId, subtype: "file_share", files: done, ...(a.thread_ts && { thread_ts: String(a.thread_ts) }) });
      }
      return { files: done.map((f) => ({ id: f.id, title: f.title })) };
    },
  };

  const fileJson = (id: string, name: string, bytes: Buffer, mimetype: string, title: string): FakeSlackFile => ({
    id,
    name,
    title,
    mimetype,
    filetype: name.includes(".") ? name.split(".").pop()! : "binary",
    size: bytes.length,
    url_private: `http://127.0.0.1:${port}/files-pri/${teamId}-${id}/${encodeURIComponent(name)}`,
    url_private_download: `http://127.0.0.1:${port}/files-pri/${teamId}-${id}/download/${encodeURIComponent(name)}`,
    mode: "hosted",
  });

  const tokenKind = (req: IncomingMessage, args: Record<string, any>): FakeSlackCall["token"] => {
    const header = String(req.headers.authorization ?? "");
    const token = header.startsWith("Bearer ") ? header.slice(7) : typeof args.token === "string" ? args.token : "";
    if (!token) return "none";
    if (token === botToken) return "bot";
    if (token === appToken) return "app";
    return "other";
  };

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
    res.end(JSON.stringify(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", `http://127.0.0.1:${port}`);
    const body = await readBody(req);
    if (req.method === "POST" && url.pathname.startsWith("/api/")) {
      const method = url.pathname.slice("/api/".length);
      const args = await parseArgs(req, body);
      const token = tokenKind(req, args);
      delete args.token;
      const limit = limits.get(method);
      if (limit && limit.times > 0) {
        limit.times--;
        calls.record({ method, args, token, status: 429, error: "ratelimited", at: Date.now() });
        return send(res, 429, { ok: false, error: "ratelimited" }, { "retry-after": String(limit.retryAfter) });
      }
      const fn = methods[method];
      if (!fn) {
        calls.record({ method, args, token, status: 200, error: "unknown_method", at: Date.now() });
        return send(res, 200, { ok: false, error: "unknown_method" });
      }
      try {
        const result = await fn(args, token);
        calls.record({ method, args, token, status: 200, at: Date.now() });
        return send(res, 200, { ok: true, ...result });
      } catch (err) {
        const code = err instanceof SlackError ? err.code : "internal_error";
        calls.record({ method, args, token, status: 200, error: code, at: Date.now() });
        return send(res, 200, { ok: false, error: code });
      }
    }
    if (req.method === "POST" && url.pathname.startsWith("/upload/v1/")) {
      const fileId = url.pathname.slice("/upload/v1/".length);
      const up = pendingUploads.get(fileId);
      if (!up) return send(res, 404, { ok: false, error: "upload_not_found" });
      let bytes = body;
      if (String(req.headers["content-type"] ?? "").startsWith("multipart/form-data")) {
        const form = await parseArgs(req, body);
        const part = Object.values(form).find((v) => Buffer.isBuffer(v));
        bytes = (part as Buffer | undefined) ?? Buffer.alloc(0);
      }
      if (bytes.length !== up.length) return send(res, 400, { ok: false, error: "length_mismatch" });
      up.bytes = bytes;
      res.writeHead(200, { "content-type": "text/plain" });
      return res.end(`OK - ${bytes.length}`);
    }
    if (req.method === "POST" && url.pathname.startsWith("/actions/")) {
      res.writeHead(200, { "content-type": "text/plain" });
      return res.end("ok");
    }
    if (req.method === "GET" && url.pathname.startsWith("/files-pri/")) {
      const id = /^\/files-pri\/[^-/]+-([^/]+)\//.exec(url.pathname)?.[1];
      const f = id ? files.get(id) : undefined;
      if (String(req.headers.authorization ?? "") !== `Bearer ${botToken}`) {
        // Slack answers an unauthenticated file request with its sign-in page, not an error.
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        return res.end("<!DOCTYPE html><html><body>Sign in to Slack</body></html>");
      }
      if (!f) return send(res, 404, { ok: false, error: "file_not_found" });
      res.writeHead(200, { "content-type": f.file.mimetype, "content-length": String(f.bytes.length) });
      return res.end(f.bytes);
    }
    send(res, 404, { ok: false, error: "not_found" });
  };

  const httpSockets = new Set<Socket>();
  const server = createServer((req, res) => {
    handle(req, res).catch((err) => send(res, 500, { ok: false, error: String(err) }));
  });
  server.on("connection", (s) => {
    httpSockets.add(s);
    s.on("close", () => httpSockets.delete(s));
  });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const ticket = url.searchParams.get("ticket") ?? "";
    if (url.pathname !== "/link/" || !tickets.delete(ticket)) {
      socket.end("HTTP/1.1 401 Unauthorized\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit("connection", ws, req));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;

  const fake: FakeSlack = {
    apiUrl: `http://127.0.0.1:${port}/api/`,
    port,
    botToken,
    appToken,
    teamId,
    appId,
    botUserId,
    botId,
    calls,
    envelopes,
    acks,
    connections,
    uploads,
    ephemerals,
    addUser,
    addChannel,
    setMember,
    addFile({ name, bytes, mimetype, title }) {
      const id = nextId("F");
      const buf = Buffer.from(bytes);
      const file = fileJson(id, name, buf, mimetype ?? guessType(name), title ?? name);
      files.set(id, { file, bytes: buf });
      return file;
    },
    userMessage(m) {
      const c = channelOf(m.channel);
      setMember(c.id, m.user, true);
      const ts = nextTs();
      store({ channel: c.id, ts, text: m.text, user: m.user, ...(m.thread_ts && { thread_ts: m.thread_ts }), ...(m.files && { subtype: "file_share", files: m.files }) });
      const sent: FakeSlackEnvelope[] = [];
      if (m.deliver === false) return { ts, envelopes: sent };
      const common = {
        user: m.user,
        text: m.text,
        ts,
        channel: c.id,
        team: teamId,
        client_msg_id: randomUUID(),
        ...(m.thread_ts && { thread_ts: m.thread_ts }),
        ...(m.files && { files: m.files, upload: false }),
      };
      if (!c.is_im && m.text.includes(`<@${botUserId}>`)) sent.push(sendEvent({ type: "app_mention", ...common }));
      sent.push(sendEvent({ type: "message", ...(m.files && { subtype: "file_share" }), channel_type: channelType(c), ...common }));
      return { ts, envelopes: sent };
    },
    sendEvent,
    redeliver(env, reason = "timeout") {
      const again: FakeSlackEnvelope = { ...env, retry_attempt: env.retry_attempt + 1, retry_reason: reason };
      transmit(again);
      return again;
    },
    async waitForAck(envelopeId, timeoutMs = 10_000) {
      await acks.waitFor((a) => a.envelope_id === envelopeId, { timeoutMs, what: `ack of ${envelopeId}` });
    },
    clickButton({ channel, ts, user, actionId }) {
      const c = channelOf(channel);
      const msg = findMessage(c.id, ts);
      if (!msg) throw new Error(`no message ${ts} in ${channel}`);
      let found: { block: Record<string, any>; element: Record<string, any> } | undefined;
      for (const block of msg.blocks ?? []) for (const element of (block.elements as Array<Record<string, any>> | undefined) ?? []) if (element.action_id === actionId) found = { block, element };
      if (!found) throw new Error(`message ${ts} has no button ${actionId}`);
      const u = users.get(user);
      const env: FakeSlackEnvelope = {
        envelope_id: randomUUID(),
        type: "interactive",
        accepts_response_payload: false,
        retry_attempt: 0,
        retry_reason: "",
        payload: {
          type: "block_actions",
          user: { id: user, username: u?.name ?? user, name: u?.name ?? user, team_id: teamId },
          api_app_id: appId,
          token: "fake-verification-token",
          container: { type: "message", message_ts: ts, channel_id: c.id, is_ephemeral: false, ...(msg.thread_ts && msg.thread_ts !== ts && { thread_ts: msg.thread_ts }) },
          trigger_id: `${Date.now()}.${randomUUID()}`,
          team: { id: teamId, domain: "fake" },
          enterprise: null,
          is_enterprise_install: false,
          channel: { id: c.id, name: c.name ?? "directmessage" },
          message: messageJson(msg),
          state: { values: {} },
          response_url: `http://127.0.0.1:${port}/actions/${randomUUID()}`,
          actions: [
            {
              action_id: actionId,
              block_id: found.block.block_id,
              text: found.element.text,
              value: found.element.value,
              ...(found.element.style && { style: found.element.style }),
              type: found.element.type ?? "button",
              action_ts: `${Date.now() / 1000}`,
            },
          ],
        },
      };
      transmit(env);
      return env;
    },
    dropSockets() {
      for (const s of sockets) s.terminate();
      sockets.clear();
    },
    sendDisconnect(reason = "refresh_requested") {
      for (const s of sockets) s.send(JSON.stringify({ type: "disconnect", reason, debug_info: { host: "fake-slack" } }));
    },
    openSockets: () => [...sockets].filter((s) => s.readyState === WebSocket.OPEN).length,
    rateLimit(method, times, retryAfterSeconds) {
      limits.set(method, { times, retryAfter: retryAfterSeconds });
    },
    messages(channel, o = {}) {
      const all = (history.get(channel) ?? []).filter((m) => o.includeDeleted || !m.deleted);
      if (o.thread === undefined) return all.filter((m) => m.thread_ts === undefined || m.thread_ts === m.ts);
      return all.filter((m) => m.thread_ts === o.thread && m.ts !== o.thread);
    },
    message: (channel, ts) => history.get(channel)?.find((m) => m.ts === ts),
    waitForMessages(channel, pred, timeoutMs = 15_000) {
      const all = () => (history.get(channel) ?? []).filter((m) => !m.deleted);
      if (pred(all())) return Promise.resolve(all());
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!pred(all())) return;
          clearTimeout(timer);
          msgWaiters.delete(check);
          resolve(all());
        };
        const timer = setTimeout(() => {
          msgWaiters.delete(check);
          const shown = all().slice(-15).map((m) => `${m.ts}${m.thread_ts && m.thread_ts !== m.ts ? ` (in ${m.thread_ts})` : ""} ${m.user}: ${m.text.slice(0, 120).replace(/\n/g, "⏎")}`);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for messages in ${channel}; have:\n${shown.join("\n")}`));
        }, timeoutMs);
        msgWaiters.add(check);
      });
    },
    async close() {
      for (const s of sockets) s.terminate();
      sockets.clear();
      wss.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of httpSockets) s.destroy();
      });
    },
  };
  return fake;
}

function guessType(name: string): string {
  const ext = name.toLowerCase().split(".").pop();
  const types: Record<string, string> = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", txt: "text/plain", md: "text/markdown", csv: "text/csv", json: "application/json", pdf: "application/pdf" };
  return (ext && types[ext]) || "application/octet-stream";
}
