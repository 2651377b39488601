// A fake Telegram Bot API on loopback, for grammY pointed at it with `client.apiRoot`:
//
// - POST /bot<token>/<method> with JSON, form-urlencoded or multipart bodies (files), answered with
//   `{ ok, result }` or `{ ok: false, error_code, description, parameters }` as Telegram does;
//   a wrong token gets 401 Unauthorized.
// - getMe, deleteWebhook, getUpdates (long polling: held until an update arrives or `timeout`
//   seconds pass; `offset` confirms earlier updates), sendMessage, editMessageText, deleteMessage,
//   sendDocument (multipart), sendChatAction, getFile, answerCallbackQuery, setMyCommands,
//   getChatMember (who is in a group: everyone who `say`s there, and `setMember`; others "left";
//   a group nobody was seen in is 400 "chat not found").
// - Text sent with `parse_mode: "HTML"` is parsed as Telegram does: only its tags, balanced, its
//   entities; otherwise 400 "can't parse entities". More than 4,096 characters after parsing is
//   400 "message is too long"; an edit to the same text is 400 "message is not modified".
// - GET /file/bot<token>/<file_path> serves files people sent (`say({ document })`) or the bot uploaded.
// - `rateLimit(method, times, retryAfter)` answers the next calls 429 with `retry_after`;
//   `fail(method, times)` answers them 502 Bad Gateway (Telegram's own outages look like that).
// - setWebhook: from then on updates are POSTed to that URL with X-Telegram-Bot-Api-Secret-Token
//   (their HTTP statuses in `webhookPosts`), and getUpdates answers 409 Conflict, as Telegram does;
//   deleteWebhook goes back to polling.
//
// People are simulated with `say()` (a message update) and `click()` (a callback_query update).
// Every Bot API call is recorded, so tests assert on what Telegram would have seen.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { CallRecorder } from "./call-recorder.js";

export interface TgUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  username?: string;
}

export interface TgChat {
  id: number;
  type: "private" | "group" | "supergroup";
  title?: string;
  is_forum?: boolean;
  first_name?: string;
  username?: string;
}

export interface TgEntity {
  type: string;
  offset: number;
  length: number;
  user?: TgUser;
}

export interface TgMessage {
  message_id: number;
  date: number;
  chat: TgChat;
  from?: TgUser;
  text?: string;
  caption?: string;
  entities?: TgEntity[];
  caption_entities?: TgEntity[];
  message_thread_id?: number;
  is_topic_message?: boolean;
  reply_to_message?: TgMessage;
  document?: { file_id: string; file_unique_id: string; file_name?: string; mime_type?: string; file_size?: number };
  reply_markup?: { inline_keyboard: Array<Array<{ text: string; callback_data?: string }>> };
  forum_topic_created?: { name: string };
}

/** A message as the fake keeps it: what Telegram shows now, and every text it had. */
export interface StoredTgMessage extends TgMessage {
  deleted?: boolean;
  versions: string[];
  /** The raw text the bot sent (HTML when parse_mode was HTML). */
  sentText?: string;
  parseMode?: string;
}

export interface TelegramCall {
  method: string;
  params: Record<string, unknown>;
  status: number;
  at: number;
}

interface StoredFile {
  file_id: string;
  file_path: string;
  bytes: Uint8Array;
}

const ALLOWED_TAGS = new Set(["b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler", "a", "code", "pre", "blockquote", "tg-emoji"]);

/** Telegram's HTML parse mode: the visible text, or why Telegram refuses it. */
export function parseTelegramHtml(html: string): { text: string } | { error: string } {
  const stack: string[] = [];
  let text = "";
  const re = /<(\/?)([a-zA-Z-]+)((?:\s+[a-zA-Z-]+(?:="[^"]*")?)*)\s*>|&(#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);|[<>&]/g;
  let last = 0;
  for (let m = re.exec(html); m; m = re.exec(html)) {
    text += html.slice(last, m.index);
    last = re.lastIndex;
    if (m[2]) {
      const tag = m[2].toLowerCase();
      if (!ALLOWED_TAGS.has(tag)) return { error: `Bad Request: can't parse entities: Unsupported start tag "${tag}" at byte offset ${m.index}` };
      if (m[1]) {
        if (stack.pop() !== tag) return { error: `Bad Request: can't parse entities: Unexpected end tag at byte offset ${m.index}` };
      } else stack.push(tag);
    } else if (m[4]) {
      const e = m[4];
      if (e.startsWith("#x")) text += String.fromCodePoint(parseInt(e.slice(2), 16));
      else if (e.startsWith("#")) text += String.fromCodePoint(parseInt(e.slice(1), 10));
      else if (e in NAMED) text += NAMED[e];
      else return { error: `Bad Request: can't parse entities: Unsupported HTML entity "&${e};"` };
    } else return { error: `Bad Request: can't parse entities: Can't find end of the entity starting at byte offset ${m.index}` };
  }
  text += html.slice(last);
  if (stack.length) return { error: `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "${stack.at(-1)}"` };
  return { text };
}
const NAMED: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };

export interface FakeTelegramOptions {
  token?: string;
  bot?: { id?: number; username?: string; first_name?: string };
}

export class FakeTelegram {
  readonly recorder = new CallRecorder<TelegramCall>();
  readonly token: string;
  readonly bot: TgUser;
  private readonly messages = new Map<string, StoredTgMessage>();
  private readonly files = new Map<string, StoredFile>();
  private readonly updates: Array<{ update_id: number } & Record<string, unknown>> = [];
  private readonly pollers = new Set<() => void>();
  private readonly limits = new Map<string, { times: number; retryAfter: number }>();
  private readonly failures = new Map<string, number>();
  private readonly callbackAnswers = new Map<string, Record<string, unknown>>();
  private nextUpdate = 1;
  private webhook?: { url: string; secret?: string };
  /** Updates posted to the webhook, with the status the bot answered. */
  readonly webhookPosts: Array<{ updateId: number; status: number }> = [];
  private nextMessage = new Map<number, number>();
  /** Group members by chat id: user id -> status ("member", "administrator", "left", "kicked"). */
  private readonly members = new Map<number, Map<number, string>>();
  private nextFile = 1;
  private server?: ReturnType<typeof createServer>;
  url = "";

  constructor(opts: FakeTelegramOptions = {}) {
    this.token = opts.token ?? "123456:TEST-token";
    this.bot = { id: opts.bot?.id ?? 777000111, is_bot: true, first_name: opts.bot?.first_name ?? "mom", username: opts.bot?.username ?? "mom_test_bot" };
  }

  get calls(): TelegramCall[] {
    return this.recorder.calls;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.serve(req, res).catch((err: unknown) => send(res, 500, { ok: false, error_code: 500, description: String(err) })));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    const addr = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${addr.port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const wake of this.pollers) wake();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** The next `times` calls of `method` are answered 429 with `retry_after` seconds. */
  rateLimit(method: string, times: number, retryAfter: number): void {
    this.limits.set(method, { times, retryAfter });
  }

  /** The next `times` calls of `method` are answered 502 Bad Gateway. */
  fail(method: string, times: number): void {
    this.failures.set(method, times);
    // A poll held open meets the outage too (a cut connection), not only the calls after it.
    if (method === "getUpdates") for (const wake of this.pollers) wake();
  }

  /** How many of the failures `fail` asked for have not been answered yet. */
  failuresLeft(method: string): number {
    return this.failures.get(method) ?? 0;
  }

  /** `user`'s membership of group `chatId` changes (joins: "member"; leaves: "left"; removed: "kicked"). */
  setMember(chatId: number, user: TgUser, status: "member" | "administrator" | "creator" | "left" | "kicked"): void {
    if (!this.members.has(chatId)) this.members.set(chatId, new Map());
    this.members.get(chatId)!.set(user.id, status);
  }

  /** A person sends a message (in a group, they are a member from then on); resolves with it as the bot will receive it. */
  say(m: { chat: TgChat; from: TgUser; text?: string; entities?: TgEntity[]; replyTo?: number; threadId?: number; document?: { name: string; bytes: Uint8Array; mimeType?: string } }): TgMessage {
    const msg: TgMessage = { message_id: this.messageId(m.chat.id), date: Math.floor(Date.now() / 1000), chat: m.chat, from: m.from };
    if (m.chat.type !== "private" && !["member", "administrator", "creator"].includes(this.members.get(m.chat.id)?.get(m.from.id) ?? "")) this.setMember(m.chat.id, m.from, "member");
    if (m.document) {
      const f = this.storeFile(m.document.bytes, `documents/${m.document.name}`);
      msg.document = { file_id: f.file_id, file_unique_id: `u${f.file_id}`, file_name: m.document.name, file_size: m.document.bytes.length, ...(m.document.mimeType && { mime_type: m.document.mimeType }) };
      if (m.text !== undefined) msg.caption = m.text;
      if (m.entities) msg.caption_entities = m.entities;
    } else {
      msg.text = m.text ?? "";
      if (m.entities) msg.entities = m.entities;
    }
    if (m.threadId !== undefined) Object.assign(msg, { message_thread_id: m.threadId, is_topic_message: true });
    if (m.replyTo !== undefined) {
      const replied = this.messages.get(`${m.chat.id}:${m.replyTo}`);
      if (replied) msg.reply_to_message = strip(replied);
    }
    this.messages.set(`${m.chat.id}:${msg.message_id}`, { ...msg, versions: [msg.text ?? msg.caption ?? ""] });
    this.push({ message: msg });
    return msg;
  }

  /** Telegram hands `msg` over again in a new update, as it does when an update was not confirmed. */
  redeliver(msg: TgMessage): void {
    this.push({ message: msg });
  }

  /** `text` with a mention of the bot in front, and its entity. */
  mention(text: string): { text: string; entities: TgEntity[] } {
    const at = `@${this.bot.username}`;
    return { text: `${at} ${text}`, entities: [{ type: "mention", offset: 0, length: at.length }] };
  }

  /** A person presses an inline-keyboard button; resolves with the bot's answerCallbackQuery. */
  async click(chatId: number, messageId: number, data: string, from: TgUser): Promise<Record<string, unknown>> {
    const message = this.messages.get(`${chatId}:${messageId}`);
    if (!message) throw new Error(`no message ${chatId}:${messageId}`);
    const id = String(this.nextUpdate * 1000 + 7);
    this.push({ callback_query: { id, from, message: strip(message), chat_instance: "ci", data } });
    const deadline = Date.now() + 15_000;
    while (!this.callbackAnswers.has(id)) {
      if (Date.now() > deadline) throw new Error(`the bot did not answer callback query ${id}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return this.callbackAnswers.get(id)!;
  }

  /** The update_id of the newest update made (by `say`, `click`, …); 0 before the first. */
  get lastUpdateId(): number {
    return this.nextUpdate - 1;
  }

  message(chatId: number, messageId: number): StoredTgMessage | undefined {
    return this.messages.get(`${chatId}:${messageId}`);
  }

  /** What the bot has in a chat now (not deleted), oldest first. */
  botMessages(chatId: number, opts: { includeDeleted?: boolean } = {}): StoredTgMessage[] {
    return [...this.messages.values()].filter((m) => m.chat.id === chatId && m.from?.id === this.bot.id && (opts.includeDeleted || !m.deleted));
  }

  fileBytes(fileId: string): Uint8Array | undefined {
    return this.files.get(fileId)?.bytes;
  }

  private messageId(chatId: number): number {
    const n = (this.nextMessage.get(chatId) ?? 0) + 1;
    this.nextMessage.set(chatId, n);
    return n;
  }

  private storeFile(bytes: Uint8Array, path: string): StoredFile {
    const id = `F${this.nextFile++}`;
    const f = { file_id: id, file_path: `${id}/${path}`, bytes };
    this.files.set(id, f);
    return f;
  }

  private push(update: Record<string, unknown>): void {
    const u = { update_id: this.nextUpdate++, ...update };
    if (this.webhook) return void this.postUpdate(u);
    this.updates.push(u);
    for (const wake of this.pollers) wake();
  }

  /** Posts an update to the webhook, as Telegram does (retried on failure there; here the status is recorded). */
  async postUpdate(update: Record<string, unknown>, secret = this.webhook?.secret): Promise<number> {
    const res = await fetch(this.webhook!.url, { method: "POST", headers: { "content-type": "application/json", ...(secret && { "x-telegram-bot-api-secret-token": secret }) }, body: JSON.stringify(update) }).catch(() => undefined);
    await res?.arrayBuffer();
    const status = res?.status ?? 0;
    this.webhookPosts.push({ updateId: Number(update.update_id), status });
    return status;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    const file = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (file) {
      const f = file[1] === this.token ? [...this.files.values()].find((x) => x.file_path === decodeURIComponent(file[2]!)) : undefined;
      if (!f) return send(res, 404, { ok: false, error_code: 404, description: "Not Found" });
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": f.bytes.length });
      res.end(Buffer.from(f.bytes));
      return;
    }
    const call = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    if (!call) return send(res, 404, { ok: false, error_code: 404, description: "Not Found" });
    const method = call[2]!;
    const params = await readParams(req, url);
    const record = (status: number) => this.recorder.record({ method, params, status, at: Date.now() });
    if (call[1] !== this.token) {
      record(401);
      return send(res, 401, { ok: false, error_code: 401, description: "Unauthorized" });
    }
    const limit = this.limits.get(method);
    if (limit && limit.times > 0) {
      limit.times--;
      record(429);
      return send(res, 429, { ok: false, error_code: 429, description: `Too Many Requests: retry after ${limit.retryAfter}`, parameters: { retry_after: limit.retryAfter } });
    }
    const failures = this.failures.get(method) ?? 0;
    if (failures > 0) {
      this.failures.set(method, failures - 1);
      record(502);
      return send(res, 502, { ok: false, error_code: 502, description: "Bad Gateway" });
    }
    const out = await this.method(method, params);
    record("error" in out ? out.status : 200);
    if ("error" in out) return send(res, out.status, { ok: false, error_code: out.status, description: out.error });
    send(res, 200, { ok: true, result: out.result });
  }

  private async method(method: string, p: Record<string, unknown>): Promise<{ result: unknown } | { error: string; status: number }> {
    switch (method) {
      case "getMe":
        return { result: { ...this.bot, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false } };
      case "deleteWebhook":
        this.webhook = undefined;
        return { result: true };
      case "setWebhook":
        if (typeof p.url !== "string" || !p.url) return { error: "Bad Request: bad webhook: URL is empty", status: 400 };
        this.webhook = { url: p.url, ...(typeof p.secret_token === "string" && { secret: p.secret_token }) };
        return { result: true };
      case "setMyCommands":
      case "sendChatAction":
        return { result: true };
      case "getUpdates": {
        if (this.webhook) return { error: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first", status: 409 };
        const updates = await this.getUpdates(Number(p.offset ?? 0), Number(p.timeout ?? 0), Number(p.limit ?? 100));
        if (updates) return { result: updates };
        this.failures.set("getUpdates", this.failuresLeft("getUpdates") - 1);
        return { error: "Bad Gateway", status: 502 };
      }
      case "sendMessage":
        return this.sendMessage(p);
      case "editMessageText":
        return this.editMessageText(p);
      case "deleteMessage": {
        const m = this.messages.get(`${p.chat_id}:${p.message_id}`);
        if (!m || m.deleted) return { error: "Bad Request: message to delete not found", status: 400 };
        m.deleted = true;
        return { result: true };
      }
      case "sendDocument":
        return this.sendDocument(p);
      case "getFile": {
        const f = this.files.get(String(p.file_id));
        if (!f) return { error: "Bad Request: invalid file_id", status: 400 };
        return { result: { file_id: f.file_id, file_unique_id: `u${f.file_id}`, file_size: f.bytes.length, file_path: f.file_path } };
      }
      case "answerCallbackQuery":
        this.callbackAnswers.set(String(p.callback_query_id), p);
        return { result: true };
      case "getChatMember": {
        const chat = this.members.get(Number(p.chat_id));
        if (!chat) return { error: "Bad Request: chat not found", status: 400 };
        const userId = Number(p.user_id);
        return { result: { status: chat.get(userId) ?? "left", user: { id: userId, is_bot: false, first_name: String(userId) } } };
      }
      default:
        return { error: `Not Found: method ${method} is not known to the fake`, status: 404 };
    }
  }

  /** The updates from `offset` on, held up to `timeoutS` until there are some; undefined when `fail` cut the poll. */
  private async getUpdates(offset: number, timeoutS: number, limit: number): Promise<unknown[] | undefined> {
    if (offset > 0) this.updates.splice(0, this.updates.findIndex((u) => u.update_id >= offset) === -1 ? this.updates.length : this.updates.findIndex((u) => u.update_id >= offset));
    const deadline = Date.now() + timeoutS * 1000;
    while (this.updates.length === 0 && Date.now() < deadline && this.server?.listening) {
      if (this.failuresLeft("getUpdates") > 0) return undefined;
      await new Promise<void>((resolve) => {
        const wake = () => (this.pollers.delete(wake), clearTimeout(t), resolve());
        const t = setTimeout(wake, Math.max(0, deadline - Date.now()));
        this.pollers.add(wake);
      });
    }
    if (this.updates.length === 0 && this.failuresLeft("getUpdates") > 0) return undefined;
    return this.updates.slice(0, limit);
  }

  private checkText(text: unknown, parseMode: unknown): { visible: string } | { error: string; status: number } {
    if (typeof text !== "string" || !text.length) return { error: "Bad Request: message text is empty", status: 400 };
    let visible = text;
    if (parseMode === "HTML") {
      const parsed = parseTelegramHtml(text);
      if ("error" in parsed) return { error: parsed.error, status: 400 };
      visible = parsed.text;
    } else if (parseMode !== undefined) return { error: `Bad Request: the fake only speaks HTML, not ${String(parseMode)}`, status: 400 };
    if (!visible.trim()) return { error: "Bad Request: message text is empty", status: 400 };
    if ([...visible].length > 4096) return { error: "Bad Request: message is too long", status: 400 };
    return { visible };
  }

  private botMessage(chatId: number, p: Record<string, unknown>): StoredTgMessage {
    const chat: TgChat = this.chatOf(chatId);
    const m: StoredTgMessage = { message_id: this.messageId(chatId), date: Math.floor(Date.now() / 1000), chat, from: this.bot, versions: [] };
    if (p.message_thread_id !== undefined) Object.assign(m, { message_thread_id: Number(p.message_thread_id), is_topic_message: true });
    const reply = p.reply_parameters as { message_id?: number } | undefined;
    if (reply?.message_id !== undefined) {
      const replied = this.messages.get(`${chatId}:${reply.message_id}`);
      if (replied) m.reply_to_message = strip(replied);
    }
    if (p.reply_markup) m.reply_markup = p.reply_markup as StoredTgMessage["reply_markup"];
    return m;
  }

  private chatOf(chatId: number): TgChat {
    for (const m of this.messages.values()) if (m.chat.id === chatId) return m.chat;
    return { id: chatId, type: chatId > 0 ? "private" : "supergroup" };
  }

  private sendMessage(p: Record<string, unknown>): { result: unknown } | { error: string; status: number } {
    const checked = this.checkText(p.text, p.parse_mode);
    if ("error" in checked) return checked;
    const m = this.botMessage(Number(p.chat_id), p);
    m.text = checked.visible;
    m.sentText = String(p.text);
    if (p.parse_mode) m.parseMode = String(p.parse_mode);
    m.versions.push(checked.visible);
    this.messages.set(`${m.chat.id}:${m.message_id}`, m);
    return { result: strip(m) };
  }

  private editMessageText(p: Record<string, unknown>): { result: unknown } | { error: string; status: number } {
    const m = this.messages.get(`${p.chat_id}:${p.message_id}`);
    if (!m || m.deleted) return { error: "Bad Request: message to edit not found", status: 400 };
    if (m.from?.id !== this.bot.id) return { error: "Bad Request: message can't be edited", status: 400 };
    const checked = this.checkText(p.text, p.parse_mode);
    if ("error" in checked) return checked;
    const markup = p.reply_markup as StoredTgMessage["reply_markup"] | undefined;
    if (checked.visible === m.text && JSON.stringify(markup ?? null) === JSON.stringify(m.reply_markup ?? null)) {
      return { error: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message", status: 400 };
    }
    m.text = checked.visible;
    m.sentText = String(p.text);
    m.versions.push(checked.visible);
    if (markup && markup.inline_keyboard.length) m.reply_markup = markup;
    else delete m.reply_markup;
    return { result: strip(m) };
  }

  private sendDocument(p: Record<string, unknown>): { result: unknown } | { error: string; status: number } {
    const doc = p.document as { name: string; type: string; bytes: Uint8Array } | string | undefined;
    if (!doc || typeof doc === "string") return { error: "Bad Request: there is no document in the request", status: 400 };
    const m = this.botMessage(Number(p.chat_id), p);
    const f = this.storeFile(doc.bytes, `documents/${doc.name}`);
    m.document = { file_id: f.file_id, file_unique_id: `u${f.file_id}`, file_name: doc.name, file_size: doc.bytes.length, ...(doc.type && { mime_type: doc.type }) };
    if (typeof p.caption === "string") m.caption = p.caption;
    m.versions.push(m.caption ?? "");
    this.messages.set(`${m.chat.id}:${m.message_id}`, m);
    return { result: strip(m) };
  }
}

function strip(m: StoredTgMessage | TgMessage): TgMessage {
  const { deleted: _d, versions: _v, sentText: _s, parseMode: _p, ...rest } = m as StoredTgMessage;
  return rest;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/** A Bot API request's parameters: query string, JSON, form-urlencoded or multipart (files become `{ name, type, bytes }`). */
async function readParams(req: IncomingMessage, url: URL): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = Object.fromEntries(url.searchParams);
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks);
  const type = req.headers["content-type"] ?? "";
  if (!body.length) return out;
  if (type.startsWith("application/json")) return { ...out, ...(JSON.parse(body.toString("utf8")) as Record<string, unknown>) };
  const boundary = /boundary=("?)([^";]+)\1/.exec(type)?.[2];
  if (!boundary) return { ...out, ...Object.fromEntries(new URLSearchParams(body.toString("utf8"))) };
  const files = new Map<string, { name: string; type: string; bytes: Uint8Array }>();
  for (const part of multipartParts(body, boundary)) {
    const disposition = /content-disposition:\s*form-data;\s*name="([^"]*)"(?:;\s*filename=("?)([^"\r\n]*)\2)?/i.exec(part.head);
    if (!disposition) continue;
    const [, name, , filename] = disposition;
    if (filename !== undefined) files.set(name!, { name: filename, type: /content-type:\s*([^\r\n]+)/i.exec(part.head)?.[1]?.trim() ?? "", bytes: new Uint8Array(part.body) });
    else {
      const value = part.body.toString("utf8");
      out[name!] = /^[[{]/.test(value) ? safeJson(value) : value;
    }
  }
  // grammY sends a file as `attach://<id>` and the bytes in a part named <id>, as Telegram allows.
  for (const [key, value] of Object.entries(out)) {
    if (typeof value === "string" && value.startsWith("attach://")) out[key] = files.get(value.slice(9));
  }
  for (const [name, f] of files) if (!(name in out) && !Object.values(out).includes(f)) out[name] = f;
  return out;
}

/** The parts of a multipart/form-data body: their header block and their bytes. */
function multipartParts(body: Buffer, boundary: string): Array<{ head: string; body: Buffer }> {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: Array<{ head: string; body: Buffer }> = [];
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === "--") break;
    const next = body.indexOf(delimiter, start);
    if (next === -1) break;
    const raw = body.subarray(start + 2, next - 2); // after CRLF, before the CRLF that precedes the delimiter
    const split = raw.indexOf("\r\n\r\n");
    if (split !== -1) parts.push({ head: raw.subarray(0, split).toString("utf8"), body: raw.subarray(split + 4) });
    at = next;
  }
  return parts;
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

export async function startFakeTelegram(opts: FakeTelegramOptions = {}): Promise<FakeTelegram> {
  return new FakeTelegram(opts).start();
}
