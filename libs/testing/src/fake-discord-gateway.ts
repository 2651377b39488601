// The gateway half of the fake Discord: a WebSocket server speaking Discord's gateway protocol
// (v10, JSON encoding, no transport compression), enough for discord.js 14:
//
//   server -> HELLO (op 10, heartbeat_interval)
//   client -> IDENTIFY (op 2: token, intents) | RESUME (op 6: token, session_id, seq)
//   server -> READY (dispatch, session_id + resume_gateway_url) then GUILD_CREATE per guild
//          |  replays the session's events after `seq`, then RESUMED;
//             INVALID_SESSION (op 9, d: false) when the session is unknown
//   client -> HEARTBEAT (op 1, last seq)  server -> HEARTBEAT_ACK (op 11)
//   server -> DISPATCH (op 0, t, s, d) for every event, numbered per session
//
// Every session keeps its events, so a client that lost its socket and resumes gets exactly what
// it missed (and, with `replayOverlap`, some it had already seen, as Discord may do).
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { randomBytes } from "node:crypto";
import { WebSocket, WebSocketServer } from "ws";
import { CallRecorder } from "./call-recorder.js";

export const GatewayOp = {
  Dispatch: 0,
  Heartbeat: 1,
  Identify: 2,
  Resume: 6,
  Reconnect: 7,
  InvalidSession: 9,
  Hello: 10,
  HeartbeatAck: 11,
} as const;

/** One frame on the gateway, either way. `path` is the URL path the socket connected to. */
export interface FakeGatewayFrame {
  dir: "in" | "out";
  connection: number;
  path: string;
  op: number;
  t?: string | null;
  s?: number | null;
  d: unknown;
  at: number;
}

interface Session {
  id: string;
  intents: number;
  seq: number;
  /** Every dispatch of this session in order, for resuming. */
  events: Array<{ s: number; t: string; d: unknown }>;
  socket?: Conn;
}

interface Conn {
  id: number;
  ws: WebSocket;
  path: string;
  session?: Session;
}

export interface GatewayHooks {
  token: string;
  /** READY payload (minus session fields) and the GUILD_CREATE payloads sent after it. */
  readyPayload(): { user: unknown; guilds: Array<{ id: string }>; application: unknown };
  guildCreates(): unknown[];
}

export interface FakeGatewayOptions {
  heartbeatIntervalMs: number;
  /** On RESUME, also replay this many events the client had already acknowledged (default 0). */
  replayOverlap?: number;
  /** Reply to heartbeats (default true); false makes the client see a zombie connection. */
  ackHeartbeats?: boolean;
}

export class FakeGateway {
  readonly frames = new CallRecorder<FakeGatewayFrame>();
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly sessions = new Map<string, Session>();
  private readonly conns = new Set<Conn>();
  private nextConn = 1;

  constructor(
    private readonly hooks: GatewayHooks,
    readonly opts: FakeGatewayOptions,
    private readonly resumeUrl: () => string,
  ) {}

  /** Hands an HTTP upgrade request for a gateway path to the WebSocket server. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, path));
  }

  /** Sessions that identified and currently have an open socket. */
  get connectedSessions(): number {
    return [...this.sessions.values()].filter((s) => s.socket && s.socket.ws.readyState === WebSocket.OPEN).length;
  }

  /** Open sockets (identified or not). */
  get openSockets(): number {
    return [...this.conns].filter((c) => c.ws.readyState === WebSocket.OPEN).length;
  }

  /** Sends an event to every session whose intents cover it; sessions without a socket keep it for RESUME. */
  dispatch(t: string, d: unknown, wants: (intents: number) => boolean = () => true, shape?: (intents: number, d: unknown) => unknown): void {
    for (const s of this.sessions.values()) {
      if (!wants(s.intents)) continue;
      this.sendDispatch(s, t, shape ? shape(s.intents, d) : d);
    }
  }

  /** Drops every socket without a close frame (like a network failure); sessions stay resumable. */
  dropConnections(): void {
    for (const c of this.conns) c.ws.terminate();
  }

  /** Closes every socket with `code` (e.g. 4000: the client resumes; 1000: the client identifies anew). */
  closeConnections(code: number, reason = ""): void {
    for (const c of this.conns) c.ws.close(code, reason);
  }

  /** Tells every client to reconnect and resume (op 7). */
  requestReconnect(): void {
    for (const c of this.conns) this.send(c, { op: GatewayOp.Reconnect, d: null });
  }

  close(): Promise<void> {
    for (const c of this.conns) c.ws.terminate();
    return new Promise((r) => this.wss.close(() => r()));
  }

  private onConnection(ws: WebSocket, path: string): void {
    const conn: Conn = { id: this.nextConn++, ws, path };
    this.conns.add(conn);
    ws.on("close", () => {
      this.conns.delete(conn);
      if (conn.session?.socket === conn) conn.session.socket = undefined;
    });
    ws.on("error", () => {});
    ws.on("message", (raw) => this.onFrame(conn, raw.toString()));
    this.send(conn, { op: GatewayOp.Hello, d: { heartbeat_interval: this.opts.heartbeatIntervalMs } });
  }

  private onFrame(conn: Conn, raw: string): void {
    let p: { op: number; d: any };
    try {
      p = JSON.parse(raw);
    } catch {
      conn.ws.close(4002, "Error while decoding payload.");
      return;
    }
    this.frames.record({ dir: "in", connection: conn.id, path: conn.path, op: p.op, d: p.d, at: Date.now() });
    switch (p.op) {
      case GatewayOp.Heartbeat:
        if (this.opts.ackHeartbeats !== false) this.send(conn, { op: GatewayOp.HeartbeatAck, d: null });
        return;
      case GatewayOp.Identify:
        return this.identify(conn, p.d);
      case GatewayOp.Resume:
        return this.resume(conn, p.d);
      default:
        conn.ws.close(4001, "Unknown opcode.");
    }
  }

  private identify(conn: Conn, d: { token?: string; intents?: number }): void {
    if (conn.session) return void conn.ws.close(4005, "Already authenticated.");
    if (d?.token !== this.hooks.token) return void conn.ws.close(4004, "Authentication failed.");
    if (typeof d.intents !== "number") return void conn.ws.close(4013, "Invalid intent(s).");
    const session: Session = { id: randomBytes(16).toString("hex"), intents: d.intents, seq: 0, events: [], socket: conn };
    this.sessions.set(session.id, session);
    conn.session = session;
    const ready = this.hooks.readyPayload();
    this.sendDispatch(session, "READY", {
      v: 10,
      user: ready.user,
      guilds: ready.guilds.map((g) => ({ id: g.id, unavailable: true })),
      session_id: session.id,
      session_type: "normal",
      resume_gateway_url: this.resumeUrl(),
      shard: [0, 1],
      application: ready.application,
      user_settings: {},
      private_channels: [],
      presences: [],
      relationships: [],
      guild_join_requests: [],
      geo_ordered_rtc_regions: [],
      auth: {},
    });
    for (const g of this.hooks.guildCreates()) this.sendDispatch(session, "GUILD_CREATE", g);
  }

  private resume(conn: Conn, d: { token?: string; session_id?: string; seq?: number }): void {
    if (d?.token !== this.hooks.token) return void conn.ws.close(4004, "Authentication failed.");
    const session = d.session_id ? this.sessions.get(d.session_id) : undefined;
    if (!session) {
      this.send(conn, { op: GatewayOp.InvalidSession, d: false });
      return;
    }
    session.socket?.ws.terminate();
    session.socket = conn;
    conn.session = session;
    const from = (d.seq ?? 0) - (this.opts.replayOverlap ?? 0);
    // READY and RESUMED belong to a connection, never replayed.
    for (const e of session.events) if (e.s > from && e.t !== "READY" && e.t !== "RESUMED") this.send(conn, { op: GatewayOp.Dispatch, t: e.t, s: e.s, d: e.d });
    this.sendDispatch(session, "RESUMED", {});
  }

  private sendDispatch(session: Session, t: string, d: unknown): void {
    const s = ++session.seq;
    session.events.push({ s, t, d });
    if (session.socket && session.socket.ws.readyState === WebSocket.OPEN) this.send(session.socket, { op: GatewayOp.Dispatch, t, s, d });
  }

  private send(conn: Conn, p: { op: number; t?: string; s?: number; d: unknown }): void {
    if (conn.ws.readyState !== WebSocket.OPEN) return;
    this.frames.record({ dir: "out", connection: conn.id, path: conn.path, op: p.op, t: p.t ?? null, s: p.s ?? null, d: p.d, at: Date.now() });
    conn.ws.send(JSON.stringify({ op: p.op, d: p.d, s: p.s ?? null, t: p.t ?? null }));
  }
}
