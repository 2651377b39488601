// A fake Matrix homeserver on loopback: the Client-Server API a bot built on matrix-bot-sdk calls,
// answered with the JSON (and the `errcode`s) a homeserver answers with.
//
// - GET /_matrix/client/versions; GET /v3/account/whoami (Bearer token; a wrong one is 401
//   M_UNKNOWN_TOKEN, as for every authenticated endpoint).
// - GET /v3/sync: long polling (`since` = a `next_batch` from before, held up to `timeout` ms
//   until something happens); `rooms.join` with each room's timeline (and its state, the first
//   time the room is seen), `rooms.invite` with the invite's stripped state, global account data.
//   Without `since`: the state and the last 20 timeline events of every joined room.
// - PUT /v3/rooms/{room}/send/{type}/{txnId}: idempotent on the transaction id (a retried send
//   gets the same event id); PUT .../redact/{event}/{txnId}; PUT .../typing/{user};
//   POST /v3/join/{room} and /v3/rooms/{room}/join (only where invited, else 403 M_FORBIDDEN);
//   GET /v3/joined_rooms, .../joined_members, .../state/{type}/{key} (404 M_NOT_FOUND when unset),
//   .../state, .../event/{event}; GET /v3/profile/{user}; GET/PUT /v3/user/{user}/account_data/{type}
//   (`m.direct`); POST /v3/user/{user}/filter.
// - Media: POST /_matrix/media/v3/upload -> an `mxc://` URI; GET
//   /_matrix/client/v1/media/download/{server}/{id} (authenticated media, Matrix 1.11) and the
//   legacy /_matrix/media/v3/download/{server}/{id}. `authenticatedMedia: false` answers the first
//   404 M_UNRECOGNIZED, as a homeserver from before 1.11 does.
// - `rateLimit(endpoint, times, retryAfterMs)` answers the next calls 429 M_LIMIT_EXCEEDED with
//   `retry_after_ms` (and Retry-After); `fail(endpoint, times)` answers them 502 Bad Gateway with a
//   plain-text body, as a reverse proxy in front of a homeserver that is down does.
//
// People are simulated with `createRoom`, `invite`, `say` (a message, in a thread, a reply, a
// file), `react`, `sayEncrypted`, `redactAs` (a moderator deleting a message), and `redeliver` (an event a second time in a later sync, as a
// homeserver may after a restart). What the bot sent is read back with `botMessages` (each with
// its text now and every version it had through `m.replace` edits) and `reactions`; every call is
// recorded, so tests assert on what the homeserver would have seen.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { CallRecorder } from "./call-recorder.js";

export interface MxUser {
  userId: string;
  displayName?: string;
}

export interface MxEvent {
  event_id: string;
  type: string;
  sender: string;
  room_id: string;
  origin_server_ts: number;
  content: Record<string, unknown>;
  state_key?: string;
  unsigned?: Record<string, unknown>;
}

/** A message the bot sent, as clients show it now. */
export interface MxBotMessage {
  eventId: string;
  msgtype: string;
  /** The text now: the latest edit's. */
  body: string;
  formattedBody?: string;
  /** Every text it had, the first one first. */
  versions: string[];
  content: Record<string, unknown>;
  /** The thread it is in (`m.thread` relation's root). */
  thread?: string;
  /** The event it replies to (`m.in_reply_to`). */
  replyTo?: string;
  redacted: boolean;
}

export interface MatrixCall {
  method: string;
  /** What was called, without ids: "sync", "send", "redact", "typing", "join", "upload", "download", … */
  endpoint: string;
  path: string;
  roomId?: string;
  query: Record<string, string>;
  body: unknown;
  status: number;
  at: number;
}

export interface FakeMatrixOptions {
  serverName?: string;
  accessToken?: string;
  bot?: { localpart?: string; displayName?: string };
  /** false: /_matrix/client/v1/media/download is unknown (404 M_UNRECOGNIZED), as before Matrix 1.11. */
  authenticatedMedia?: boolean;
}

interface Room {
  id: string;
  state: Map<string, MxEvent>;
  /** Stream position from which the bot sees the room's timeline (its join). */
  botSince?: number;
  /** Rooms whose state the bot's sync has not delivered yet. */
  stateSent: boolean;
}

type EntryBody = { kind: "timeline"; roomId: string; event: MxEvent } | { kind: "invite"; roomId: string } | { kind: "account_data"; type: string };
type Entry = EntryBody & { pos: number };

interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string | number>;
}

type Handler = (body: unknown, query: Record<string, string>, contentType: string) => Reply | Promise<Reply>;

const json = (status: number, body: unknown): Reply => ({ status, body });
const matrixError = (status: number, errcode: string, error: string): Reply => json(status, { errcode, error });

export class FakeMatrix {
  readonly recorder = new CallRecorder<MatrixCall>();
  readonly serverName: string;
  readonly accessToken: string;
  readonly bot: MxUser;
  url = "";
  private readonly rooms = new Map<string, Room>();
  private readonly stream: Entry[] = [];
  private readonly events = new Map<string, MxEvent>();
  private readonly users = new Map<string, MxUser>();
  private readonly accountData = new Map<string, Record<string, unknown>>();
  private readonly media = new Map<string, { bytes: Uint8Array; contentType: string; filename?: string }>();
  private readonly txns = new Map<string, string>();
  private readonly limits = new Map<string, { times: number; retryAfterMs: number }>();
  private readonly failures = new Map<string, number>();
  private readonly waiters = new Set<() => void>();
  private readonly authenticatedMedia: boolean;
  private nextId = 1;
  private server?: ReturnType<typeof createServer>;

  constructor(opts: FakeMatrixOptions = {}) {
    this.serverName = opts.serverName ?? "example.org";
    this.accessToken = opts.accessToken ?? `syt_${randomBytes(12).toString("hex")}`;
    this.bot = { userId: `@${opts.bot?.localpart ?? "mom"}:${this.serverName}`, displayName: opts.bot?.displayName ?? "mom" };
    this.users.set(this.bot.userId, this.bot);
    this.authenticatedMedia = opts.authenticatedMedia ?? true;
  }

  get calls(): MatrixCall[] {
    return this.recorder.calls;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.serve(req, res).catch((err: unknown) => send(res, matrixError(500, "M_UNKNOWN", String(err)))));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.wake();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  /** A person of this server: `user("ana", "Ana Lopez")` is @ana:<server>. */
  user(localpart: string, displayName?: string): MxUser {
    const u = { userId: `@${localpart}:${this.serverName}`, ...(displayName && { displayName }) };
    this.users.set(u.userId, u);
    return u;
  }

  /**
   * A room with `members` joined and, unless `invite` says the bot is only invited (by the first
   * member), the bot too. `direct`: listed in the bot's `m.direct`; `encrypted`: `m.room.encryption` set.
   */
  createRoom(o: { members: MxUser[]; name?: string; encrypted?: boolean; direct?: boolean; invite?: boolean }): string {
    const id = `!${randomBytes(6).toString("hex")}:${this.serverName}`;
    const room: Room = { id, state: new Map(), stateSent: false };
    this.rooms.set(id, room);
    const creator = o.members[0] ?? this.bot;
    this.append(id, { type: "m.room.create", sender: creator.userId, state_key: "", content: { room_version: "11" } });
    for (const m of o.members) this.append(id, { type: "m.room.member", sender: m.userId, state_key: m.userId, content: { membership: "join", ...(m.displayName && { displayname: m.displayName }) } });
    if (o.name) this.append(id, { type: "m.room.name", sender: creator.userId, state_key: "", content: { name: o.name } });
    if (o.encrypted) this.append(id, { type: "m.room.encryption", sender: creator.userId, state_key: "", content: { algorithm: "m.megolm.v1.aes-sha2" } });
    if (o.invite) this.invite(id, creator, { isDirect: o.direct });
    else this.joinBot(room);
    if (o.direct) {
      const direct = { ...(this.accountData.get("m.direct") ?? {}) } as Record<string, string[]>;
      for (const m of o.members) direct[m.userId] = [...(direct[m.userId] ?? []), id];
      this.setAccountData("m.direct", direct);
    }
    return id;
  }

  /** `from` invites the bot. */
  invite(roomId: string, from: MxUser, o: { isDirect?: boolean } = {}): void {
    this.append(roomId, { type: "m.room.member", sender: from.userId, state_key: this.bot.userId, content: { membership: "invite", ...(o.isDirect && { is_direct: true }) } });
    this.push({ kind: "invite", roomId });
  }

  /** Turns encryption on in a room. */
  encrypt(roomId: string, by: MxUser): MxEvent {
    return this.append(roomId, { type: "m.room.encryption", sender: by.userId, state_key: "", content: { algorithm: "m.megolm.v1.aes-sha2" } });
  }

  /** `text` mentioning the bot as Element does: its display name as a pill, and `m.mentions`. */
  mention(text: string): { text: string; html: string; mentions: string[] } {
    const name = this.bot.displayName ?? this.bot.userId;
    return { text: `${name}: ${text}`, html: `<a href="https://matrix.to/#/${this.bot.userId}">${name}</a>: ${text}`, mentions: [this.bot.userId] };
  }

  /**
   * A person sends a message (`m.text`, or `msgtype`); `mentions` becomes `m.mentions.user_ids`
   * (left out: no `m.mentions` at all, as older clients send); `thread` puts it in a thread;
   * `replyTo` makes it a reply; `file` uploads the bytes and sends an `m.file` (`text` is its caption);
   * `content`: more fields of the event's content, as any client may add (a forged one included).
   */
  say(
    roomId: string,
    from: MxUser,
    m: { text?: string; html?: string; mentions?: string[]; msgtype?: string; thread?: string; replyTo?: string; file?: { name: string; bytes: Uint8Array; mimeType?: string; msgtype?: string }; content?: Record<string, unknown> },
  ): MxEvent {
    let content: Record<string, unknown>;
    if (m.file) {
      const mxc = this.storeMedia(m.file.bytes, m.file.mimeType ?? "application/octet-stream", m.file.name);
      content = { msgtype: m.file.msgtype ?? "m.file", body: m.text ?? m.file.name, filename: m.file.name, url: mxc, info: { size: m.file.bytes.length, ...(m.file.mimeType && { mimetype: m.file.mimeType }) } };
    } else {
      content = { msgtype: m.msgtype ?? "m.text", body: m.text ?? "" };
      if (m.html) Object.assign(content, { format: "org.matrix.custom.html", formatted_body: m.html });
    }
    if (m.mentions) content["m.mentions"] = { user_ids: m.mentions };
    if (m.thread) content["m.relates_to"] = { rel_type: "m.thread", event_id: m.thread, is_falling_back: !m.replyTo, "m.in_reply_to": { event_id: m.replyTo ?? m.thread } };
    else if (m.replyTo) content["m.relates_to"] = { "m.in_reply_to": { event_id: m.replyTo } };
    return this.append(roomId, { type: "m.room.message", sender: from.userId, content: { ...content, ...m.content } });
  }

  /** A message as an encrypted room has them: ciphertext only. */
  sayEncrypted(roomId: string, from: MxUser): MxEvent {
    return this.append(roomId, { type: "m.room.encrypted", sender: from.userId, content: { algorithm: "m.megolm.v1.aes-sha2", ciphertext: randomBytes(32).toString("base64"), sender_key: "k", device_id: "D", session_id: "s" } });
  }

  /** A reaction (`m.annotation`) of `from` on an event. */
  react(roomId: string, from: MxUser, eventId: string, key: string): MxEvent {
    return this.append(roomId, { type: "m.reaction", sender: from.userId, content: { "m.relates_to": { rel_type: "m.annotation", event_id: eventId, key } } });
  }

  /**
   * `by` (a moderator) redacts an event, the bot's included: clients show it deleted, and edits of
   * it show nothing either. As in room version 11, `redacts` is in the content.
   */
  redactAs(by: MxUser, eventId: string): MxEvent {
    const target = this.events.get(eventId);
    if (!target) throw new Error(`no event ${eventId}`);
    return this.redaction(target, by.userId, {});
  }

  /** The same event once more, in a later sync. */
  redeliver(eventId: string): void {
    const event = this.events.get(eventId);
    if (!event) throw new Error(`no event ${eventId}`);
    this.push({ kind: "timeline", roomId: event.room_id, event });
  }

  /** The next `times` calls of `endpoint` (see MatrixCall.endpoint) are answered 429 M_LIMIT_EXCEEDED. */
  rateLimit(endpoint: string, times: number, retryAfterMs: number): void {
    this.limits.set(endpoint, { times, retryAfterMs });
  }

  /** The next `times` calls of `endpoint` are answered 502 Bad Gateway (not JSON). */
  fail(endpoint: string, times: number): void {
    this.failures.set(endpoint, times);
  }

  event(eventId: string): MxEvent | undefined {
    return this.events.get(eventId);
  }

  /** The bot's messages in a room (not its edits), oldest first, as clients show them now. */
  botMessages(roomId: string): MxBotMessage[] {
    const out: MxBotMessage[] = [];
    for (const e of this.timeline(roomId)) {
      if (e.sender !== this.bot.userId || e.type !== "m.room.message") continue;
      const rel = relation(e.content);
      if (rel.rel_type === "m.replace") continue;
      const edits = this.timeline(roomId).filter((x) => x.type === "m.room.message" && x.sender === e.sender && relation(x.content).rel_type === "m.replace" && relation(x.content).event_id === e.event_id);
      const now = edits.length ? (edits.at(-1)!.content["m.new_content"] as Record<string, unknown>) : e.content;
      const redacted = !!e.unsigned?.redacted_because;
      out.push({
        eventId: e.event_id,
        msgtype: String(now.msgtype ?? e.content.msgtype ?? ""),
        body: redacted ? "" : String(now.body ?? ""),
        ...(typeof now.formatted_body === "string" && { formattedBody: now.formatted_body }),
        versions: [e.content, ...edits.map((x) => x.content["m.new_content"] as Record<string, unknown>)].map((c) => String(c?.body ?? "")),
        content: e.content,
        ...(rel.rel_type === "m.thread" && rel.event_id && { thread: rel.event_id }),
        ...(rel["m.in_reply_to"]?.event_id && !(rel.rel_type === "m.thread" && rel.is_falling_back) && { replyTo: rel["m.in_reply_to"].event_id }),
        redacted,
      });
    }
    return out;
  }

  /** Reactions on an event that are not redacted. */
  reactions(roomId: string, eventId: string): MxEvent[] {
    return this.timeline(roomId).filter((e) => e.type === "m.reaction" && !e.unsigned?.redacted_because && relation(e.content).event_id === eventId);
  }

  /** The bytes behind an `mxc://` URI. */
  mediaBytes(mxc: string): Uint8Array | undefined {
    return this.media.get(mxc.replace(/^mxc:\/\//, ""))?.bytes;
  }

  private timeline(roomId: string): MxEvent[] {
    return [...this.events.values()].filter((e) => e.room_id === roomId);
  }

  private eventId(): string {
    return `$${this.nextId++}${randomBytes(8).toString("base64url")}`;
  }

  private append(roomId: string, e: Omit<MxEvent, "event_id" | "room_id" | "origin_server_ts">): MxEvent {
    const room = this.rooms.get(roomId);
    if (!room) throw new Error(`no room ${roomId}`);
    const event: MxEvent = { event_id: this.eventId(), room_id: roomId, origin_server_ts: Date.now(), ...e };
    this.events.set(event.event_id, event);
    if (event.state_key !== undefined) room.state.set(`${event.type}|${event.state_key}`, event);
    this.push({ kind: "timeline", roomId, event });
    return event;
  }

  private push(e: EntryBody): void {
    this.stream.push({ ...e, pos: this.stream.length + 1 });
    this.wake();
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  private membership(room: Room, userId: string): string | undefined {
    return room.state.get(`m.room.member|${userId}`)?.content.membership as string | undefined;
  }

  private joinBot(room: Room): void {
    this.append(room.id, { type: "m.room.member", sender: this.bot.userId, state_key: this.bot.userId, content: { membership: "join", displayname: this.bot.displayName } });
    room.botSince = this.stream.length;
  }

  private setAccountData(type: string, content: Record<string, unknown>): void {
    this.accountData.set(type, content);
    this.push({ kind: "account_data", type });
  }

  private storeMedia(bytes: Uint8Array, contentType: string, filename?: string): string {
    const id = `${this.serverName}/${randomBytes(9).toString("base64url")}`;
    this.media.set(id, { bytes, contentType, ...(filename && { filename }) });
    return `mxc://${id}`;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const raw = await readBody(req);
    const contentType = req.headers["content-type"] ?? "";
    // Media bodies are the file's bytes, whatever their type.
    const body = !url.pathname.startsWith("/_matrix/media/") && contentType.startsWith("application/json") && raw.length ? (JSON.parse(raw.toString("utf8")) as unknown) : raw;
    const query = Object.fromEntries(url.searchParams);
    const route = this.route(req.method ?? "GET", url.pathname);
    const call: MatrixCall = { method: req.method ?? "GET", endpoint: route.endpoint, path: url.pathname, ...(route.roomId && { roomId: route.roomId }), query, body: Buffer.isBuffer(body) ? { bytes: body.length } : body, status: 0, at: Date.now() };
    let reply: Reply;
    const limit = this.limits.get(route.endpoint);
    if (route.auth && req.headers.authorization !== `Bearer ${this.accessToken}`) reply = matrixError(401, "M_UNKNOWN_TOKEN", "Invalid access token passed.");
    else if (limit && limit.times > 0) {
      limit.times--;
      reply = { status: 429, body: { errcode: "M_LIMIT_EXCEEDED", error: "Too Many Requests", retry_after_ms: limit.retryAfterMs }, headers: { "retry-after": Math.ceil(limit.retryAfterMs / 1000) } };
    } else if ((this.failures.get(route.endpoint) ?? 0) > 0) {
      this.failures.set(route.endpoint, this.failures.get(route.endpoint)! - 1);
      reply = { status: 502, body: Buffer.from("Bad Gateway"), headers: { "content-type": "text/plain" } };
    } else reply = await route.handle(body, query, contentType);
    call.status = reply.status;
    this.recorder.record(call);
    send(res, reply);
  }

  private route(method: string, path: string): { endpoint: string; roomId?: string; auth: boolean; handle: Handler } {
    const seg = path.split("/").slice(1).map(decodeURIComponent);
    const at = (...prefix: string[]) => prefix.every((p, i) => seg[i] === p);
    const r = (endpoint: string, handle: Handler, roomId?: string, auth = true) => ({ endpoint, auth, handle, ...(roomId && { roomId }) });
    if (method === "GET" && path === "/_matrix/client/versions") return r("versions", () => json(200, { versions: ["v1.1", "v1.2", "v1.3", "v1.4", "v1.5", "v1.6", "v1.7", "v1.8", "v1.9", "v1.10", "v1.11"], unstable_features: {} }), undefined, false);
    if (at("_matrix", "media", "v3", "upload") && method === "POST") return r("upload", (body, q, type) => this.upload(body, q, type));
    if (at("_matrix", "media", "v3", "download")) return r("download", () => this.download(seg[4], seg[5]), undefined, false);
    if (at("_matrix", "client", "v1", "media", "download"))
      return r("download", () => (this.authenticatedMedia ? this.download(seg[5], seg[6]) : matrixError(404, "M_UNRECOGNIZED", "Unrecognized request")));
    if (!at("_matrix", "client", "v3")) return r("unknown", () => matrixError(404, "M_UNRECOGNIZED", "Unrecognized request"));
    const [, , , what, a, b, c, d] = seg;
    if (what === "account" && a === "whoami") return r("whoami", () => json(200, { user_id: this.bot.userId, device_id: "FAKEDEVICE", is_guest: false }));
    if (what === "sync" && method === "GET") return r("sync", (_b, q) => this.sync(q));
    if (what === "joined_rooms") return r("joined_rooms", () => json(200, { joined_rooms: [...this.rooms.values()].filter((x) => this.membership(x, this.bot.userId) === "join").map((x) => x.id) }));
    if (what === "profile" && a) return r("profile", () => this.profile(a));
    if (what === "join" && a && method === "POST") return r("join", () => this.join(a), a);
    if (what === "user" && b === "filter" && method === "POST") return r("filter", () => json(200, { filter_id: "1" }));
    if (what === "user" && b === "account_data" && c) {
      if (method === "PUT") return r("account_data", (body) => (this.setAccountData(c, body as Record<string, unknown>), json(200, {})));
      return r("account_data", () => (this.accountData.has(c) ? json(200, this.accountData.get(c)) : matrixError(404, "M_NOT_FOUND", "Account data not found")));
    }
    if (what === "rooms" && a) {
      const room = this.rooms.get(a);
      const roomId = a;
      if (!room) return r(b ?? "room", () => matrixError(404, "M_NOT_FOUND", "Unknown room"), roomId);
      if (b === "join" && method === "POST") return r("join", () => this.join(roomId), roomId);
      const member = this.membership(room, this.bot.userId) === "join";
      const forbidden = () => matrixError(403, "M_FORBIDDEN", `User ${this.bot.userId} not in room ${roomId}`);
      if (b === "send" && c && d && method === "PUT") return r("send", (body) => (member ? this.send(room, c, d, body as Record<string, unknown>) : forbidden()), roomId);
      if (b === "redact" && c && d && method === "PUT") return r("redact", (body) => (member ? this.redact(room, c, d, body as Record<string, unknown>) : forbidden()), roomId);
      if (b === "typing" && method === "PUT") return r("typing", () => (member ? json(200, {}) : forbidden()), roomId);
      if (b === "joined_members") return r("joined_members", () => (member ? this.joinedMembers(room) : forbidden()), roomId);
      if (b === "state" && c !== undefined) return r("state", () => (member ? this.stateEvent(room, c, d ?? "") : forbidden()), roomId);
      if (b === "state") return r("state", () => (member ? json(200, [...room.state.values()]) : forbidden()), roomId);
      if (b === "event" && c) return r("event", () => (member && this.events.get(c)?.room_id === roomId ? json(200, this.events.get(c)) : matrixError(404, "M_NOT_FOUND", "Event not found")), roomId);
    }
    return r("unknown", () => matrixError(404, "M_UNRECOGNIZED", "Unrecognized request"));
  }

  private async sync(q: Record<string, string>): Promise<Reply> {
    const since = q.since ? Number(/^s(\d+)$/.exec(q.since)?.[1] ?? NaN) : undefined;
    if (since !== undefined && !Number.isFinite(since)) return matrixError(400, "M_INVALID_PARAM", "Invalid since token");
    const deadline = Date.now() + Math.min(Number(q.timeout ?? 0) || 0, 60_000);
    while (since !== undefined && this.stream.length <= since && Date.now() < deadline && this.server) {
      await new Promise<void>((resolve) => {
        const wake = () => (this.waiters.delete(wake), clearTimeout(t), resolve());
        const t = setTimeout(wake, Math.max(0, deadline - Date.now()));
        this.waiters.add(wake);
      });
    }
    const next = this.stream.length;
    const entries = this.stream.slice(since ?? 0);
    const join: Record<string, unknown> = {};
    const invite: Record<string, unknown> = {};
    const accountData = new Set<string>();
    for (const room of this.rooms.values()) {
      if (this.membership(room, this.bot.userId) === "join" && room.botSince !== undefined) {
        let events = entries.filter((e): e is Extract<Entry, { kind: "timeline" }> => e.kind === "timeline" && e.roomId === room.id && e.pos >= room.botSince!).map((e) => e.event);
        const initial = since === undefined || !room.stateSent;
        if (since === undefined) events = events.slice(-20);
        if (!events.length && !initial) continue;
        const inTimeline = new Set(events.map((e) => e.event_id));
        join[room.id] = {
          timeline: { events, limited: false, prev_batch: `p${next}` },
          state: { events: initial ? [...room.state.values()].filter((e) => !inTimeline.has(e.event_id)) : [] },
          ephemeral: { events: [] },
          account_data: { events: [] },
          unread_notifications: {},
        };
        room.stateSent = true;
      } else if (this.membership(room, this.bot.userId) === "invite" && entries.some((e) => e.kind === "invite" && e.roomId === room.id)) {
        const stripped = [...room.state.values()].filter((e) => ["m.room.create", "m.room.name", "m.room.encryption", "m.room.join_rules"].includes(e.type) || e.state_key === this.bot.userId);
        invite[room.id] = { invite_state: { events: stripped.map(({ type, state_key, sender, content }) => ({ type, state_key, sender, content })) } };
      }
    }
    for (const e of entries) if (e.kind === "account_data") accountData.add(e.type);
    return json(200, {
      next_batch: `s${next}`,
      rooms: { join, invite, leave: {} },
      account_data: { events: [...accountData].map((type) => ({ type, content: this.accountData.get(type) })) },
      presence: { events: [] },
    });
  }

  private join(roomId: string): Reply {
    const room = this.rooms.get(roomId);
    if (!room) return matrixError(404, "M_NOT_FOUND", "Unknown room");
    const membership = this.membership(room, this.bot.userId);
    if (membership !== "join") {
      if (membership !== "invite") return matrixError(403, "M_FORBIDDEN", "You are not invited to this room.");
      this.joinBot(room);
    }
    return json(200, { room_id: roomId });
  }

  private send(room: Room, type: string, txnId: string, content: Record<string, unknown>): Reply {
    const key = `${room.id}:${txnId}`;
    const known = this.txns.get(key);
    if (known) return json(200, { event_id: known });
    const event = this.append(room.id, { type, sender: this.bot.userId, content });
    this.txns.set(key, event.event_id);
    return json(200, { event_id: event.event_id });
  }

  private redact(room: Room, eventId: string, txnId: string, content: Record<string, unknown>): Reply {
    const key = `${room.id}:redact:${txnId}`;
    const known = this.txns.get(key);
    if (known) return json(200, { event_id: known });
    const target = this.events.get(eventId);
    if (!target || target.room_id !== room.id) return matrixError(404, "M_NOT_FOUND", "Event not found");
    if (target.sender !== this.bot.userId) return matrixError(403, "M_FORBIDDEN", "You cannot redact other people's events here.");
    const redaction = this.redaction(target, this.bot.userId, content);
    this.txns.set(key, redaction.event_id);
    return json(200, { event_id: redaction.event_id });
  }

  private redaction(target: MxEvent, sender: string, content: Record<string, unknown>): MxEvent {
    const redaction = this.append(target.room_id, { type: "m.room.redaction", sender, content: { ...content, redacts: target.event_id } });
    target.unsigned = { ...target.unsigned, redacted_because: redaction };
    return redaction;
  }

  private joinedMembers(room: Room): Reply {
    const joined: Record<string, { display_name?: string }> = {};
    for (const e of room.state.values()) {
      if (e.type === "m.room.member" && e.content.membership === "join") joined[e.state_key!] = { ...(typeof e.content.displayname === "string" && { display_name: e.content.displayname }) };
    }
    return json(200, { joined });
  }

  private stateEvent(room: Room, type: string, stateKey: string): Reply {
    const e = room.state.get(`${type}|${stateKey}`);
    return e ? json(200, e.content) : matrixError(404, "M_NOT_FOUND", "Event not found.");
  }

  private profile(userId: string): Reply {
    const u = this.users.get(userId);
    if (!u) return matrixError(404, "M_NOT_FOUND", "Profile was not found");
    return json(200, u.displayName ? { displayname: u.displayName } : {});
  }

  private upload(body: unknown, q: Record<string, string>, contentType: string): Reply {
    if (!Buffer.isBuffer(body) || !body.length) return matrixError(400, "M_BAD_JSON", "expected the file's bytes");
    return json(200, { content_uri: this.storeMedia(new Uint8Array(body), contentType || "application/octet-stream", q.filename) });
  }

  private download(server: string | undefined, mediaId: string | undefined): Reply {
    const m = this.media.get(`${server}/${mediaId}`);
    if (!m) return matrixError(404, "M_NOT_FOUND", "Not found");
    return { status: 200, body: Buffer.from(m.bytes), headers: { "content-type": m.contentType } };
  }
}

function relation(content: Record<string, unknown>): { rel_type?: string; event_id?: string; is_falling_back?: boolean; "m.in_reply_to"?: { event_id?: string } } {
  const r = content["m.relates_to"];
  return r && typeof r === "object" ? (r as ReturnType<typeof relation>) : {};
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function send(res: ServerResponse, r: Reply): void {
  if (Buffer.isBuffer(r.body)) {
    res.writeHead(r.status, { "content-length": r.body.length, ...r.headers });
    res.end(r.body);
    return;
  }
  res.writeHead(r.status, { "content-type": "application/json", ...r.headers });
  res.end(JSON.stringify(r.body));
}

export async function startFakeMatrix(opts: FakeMatrixOptions = {}): Promise<FakeMatrix> {
  return new FakeMatrix(opts).start();
}
