// A fake WhatsApp Business Cloud API on loopback: the Graph API endpoints a bot calls, and Meta's
// side of the webhook.
//
// - POST /<version>/<phone number id>/messages (Bearer token): text, document, interactive reply
//   buttons, and `status: "read"` (read receipts, with an optional typing indicator). Checked as
//   the Cloud API checks them: body <= 4,096 characters, button body <= 1,024, at most 3 buttons
//   with titles <= 20 characters and unique ids <= 256, and the 24-hour customer-service window:
//   a free-form message to someone whose last message is older than 24 h is error 131047 — at once,
//   or, with `windowErrorsLater = true`, as the real API mostly does it: the send is accepted and a
//   `failed` status webhook with 131047 follows.
// - POST /<version>/<phone number id>/media (multipart upload) -> a media id.
// - GET /<version>/<media id> -> `{ url, mime_type, file_size, … }`; GET of that url with the
//   token -> the bytes (media people sent with `say({ media })`, or uploaded by the bot).
// - `rateLimit(times)` answers the next message sends with error 130429 (HTTP 429).
// - The webhook side: `say()` / `clickButton()` POST a `whatsapp_business_account` change to the
//   ingress, signed with the app secret in X-Hub-Signature-256 as Meta signs it (`say({ sentAt })`:
//   a message written then and delivered now, as Meta re-delivers after an outage); `redeliver(id)`
//   posts a message's webhook again as it was (Meta retries a post it thinks failed); `post()` sends
//   any body with any signature (or none) and `verify()` performs the GET handshake.
import { createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { CallRecorder } from "./call-recorder.js";

export interface WaCall {
  method: string;
  path: string;
  body: Record<string, unknown>;
  status: number;
  at: number;
}

/** A message the business sent, as the fake keeps it. */
export interface WaSent {
  id: string;
  to: string;
  type: string;
  text?: string;
  /** For interactive messages: the buttons (id, title). */
  buttons?: Array<{ id: string; title: string }>;
  document?: { id: string; filename?: string; caption?: string };
  context?: string;
  at: number;
}

interface Media {
  id: string;
  bytes: Uint8Array;
  mimeType: string;
  filename?: string;
}

export interface FakeWhatsAppOptions {
  accessToken?: string;
  appSecret?: string;
  verifyToken?: string;
  phoneNumberId?: string;
  version?: string;
}

const WINDOW_MS = 24 * 60 * 60 * 1000;

export class FakeWhatsApp {
  readonly recorder = new CallRecorder<WaCall>();
  readonly accessToken: string;
  readonly appSecret: string;
  readonly verifyToken: string;
  readonly phoneNumberId: string;
  readonly version: string;
  readonly sent: WaSent[] = [];
  readonly reads: Array<{ messageId: string; typing: boolean; at: number }> = [];
  /** Where the ingress listens (set by the test once it is up): `http://127.0.0.1:<port>/webhook`. */
  webhookUrl = "";
  url = "";
  private readonly media = new Map<string, Media>();
  private readonly lastInbound = new Map<string, number>();
  /** Inbound message id -> the webhook body posted for it, for `redeliver`. */
  private readonly posted = new Map<string, string>();
  private limited = 0;
  private n = 1;
  private server?: ReturnType<typeof createServer>;

  constructor(o: FakeWhatsAppOptions = {}) {
    this.accessToken = o.accessToken ?? "EAAG-test-token";
    this.appSecret = o.appSecret ?? "test-app-secret";
    this.verifyToken = o.verifyToken ?? "test-verify-token";
    this.phoneNumberId = o.phoneNumberId ?? "1098765432";
    this.version = o.version ?? "v21.0";
  }

  get calls(): WaCall[] {
    return this.recorder.calls;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.serve(req, res).catch((err: unknown) => json(res, 500, { error: { message: String(err), code: 1 } })));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** Closed-window sends are accepted and reported failed by a status webhook afterwards. */
  windowErrorsLater = false;

  rateLimit(times: number): void {
    this.limited = times;
  }

  /** Makes `waId`'s last message older than 24 hours: free-form messages to them now fail. */
  closeWindow(waId: string): void {
    this.lastInbound.set(waId, Date.now() - WINDOW_MS - 60_000);
  }

  /** Messages the business sent to `waId`. */
  sentTo(waId: string): WaSent[] {
    return this.sent.filter((m) => m.to === waId);
  }

  /** A person writes (text, or media with a caption); the change is posted, signed, to the webhook. Resolves with the message id and the webhook's HTTP status. */
  async say(
    from: { waId: string; name: string },
    m: { text?: string; media?: { kind: "image" | "document"; bytes: Uint8Array; mimeType: string; filename?: string }; replyTo?: string; sentAt?: number },
  ): Promise<{ id: string; status: number }> {
    const id = `wamid.IN${this.n++}${randomBytes(3).toString("hex")}`;
    const sentAt = m.sentAt ?? Date.now();
    const message: Record<string, unknown> = { from: from.waId, id, timestamp: String(Math.floor(sentAt / 1000)) };
    if (m.media) {
      const media = this.storeMedia(m.media.bytes, m.media.mimeType, m.media.filename);
      message.type = m.media.kind;
      message[m.media.kind] = { id: media.id, mime_type: m.media.mimeType, sha256: "x", ...(m.media.filename && { filename: m.media.filename }), ...(m.text && { caption: m.text }) };
    } else {
      message.type = "text";
      message.text = { body: m.text ?? "" };
    }
    if (m.replyTo) message.context = { from: this.phoneNumberId, id: m.replyTo };
    if (sentAt > (this.lastInbound.get(from.waId) ?? 0)) this.lastInbound.set(from.waId, sentAt);
    const status = await this.deliver(from, message);
    return { id, status };
  }

  /** A person taps a reply button of an interactive message. */
  async clickButton(from: { waId: string; name: string }, of: WaSent, buttonTitle: string): Promise<{ id: string; status: number }> {
    const button = of.buttons?.find((b) => b.title === buttonTitle);
    if (!button) throw new Error(`no button "${buttonTitle}" on ${of.id}`);
    const id = `wamid.IN${this.n++}`;
    this.lastInbound.set(from.waId, Date.now());
    const status = await this.deliver(from, { from: from.waId, id, timestamp: String(Math.floor(Date.now() / 1000)), type: "interactive", context: { from: this.phoneNumberId, id: of.id }, interactive: { type: "button_reply", button_reply: button } });
    return { id, status };
  }

  /** The webhook body Meta posts for one inbound message. */
  changeFor(from: { waId: string; name: string }, message: Record<string, unknown>): Record<string, unknown> {
    return {
      object: "whatsapp_business_account",
      entry: [
        {
          id: "WABA-1",
          changes: [
            {
              field: "messages",
              value: {
                messaging_product: "whatsapp",
                metadata: { display_phone_number: "15550000000", phone_number_id: this.phoneNumberId },
                contacts: [{ profile: { name: from.name }, wa_id: from.waId }],
                messages: [message],
              },
            },
          ],
        },
      ],
    };
  }

  /** Ids of sends accepted and then reported failed (windowErrorsLater). */
  readonly failedLater: string[] = [];

  private async postStatus(status: Record<string, unknown>): Promise<void> {
    const raw = JSON.stringify({
      object: "whatsapp_business_account",
      entry: [{ id: "WABA-1", changes: [{ field: "messages", value: { messaging_product: "whatsapp", metadata: { display_phone_number: "15550000000", phone_number_id: this.phoneNumberId }, statuses: [status] } }] }],
    });
    await this.post(raw, this.sign(raw)).catch(() => {});
  }

  /** `sha256=<hex>` as Meta computes it over the raw body. */
  sign(raw: string): string {
    return `sha256=${createHmac("sha256", this.appSecret).update(raw).digest("hex")}`;
  }

  /** Posts `body` to the webhook with this signature header (undefined: none). */
  async post(body: unknown, signature: string | undefined): Promise<number> {
    const raw = typeof body === "string" ? body : JSON.stringify(body);
    const res = await fetch(this.webhookUrl, { method: "POST", headers: { "content-type": "application/json", ...(signature !== undefined && { "x-hub-signature-256": signature }) }, body: raw });
    await res.arrayBuffer();
    return res.status;
  }

  /** Meta's verification GET; resolves with the status and body. */
  async verify(token: string, challenge = "1158201444"): Promise<{ status: number; body: string }> {
    const u = new URL(this.webhookUrl);
    u.searchParams.set("hub.mode", "subscribe");
    u.searchParams.set("hub.verify_token", token);
    u.searchParams.set("hub.challenge", challenge);
    const res = await fetch(u);
    return { status: res.status, body: await res.text() };
  }

  private async deliver(from: { waId: string; name: string }, message: Record<string, unknown>): Promise<number> {
    const raw = JSON.stringify(this.changeFor(from, message));
    this.posted.set(String(message.id), raw);
    return this.post(raw, this.sign(raw));
  }

  /** Meta posts the webhook of message `id` again, byte for byte; resolves with the webhook's HTTP status. */
  async redeliver(id: string): Promise<number> {
    const raw = this.posted.get(id);
    if (raw === undefined) throw new Error(`fake whatsapp: no webhook post of ${id} to deliver again`);
    return this.post(raw, this.sign(raw));
  }

  private storeMedia(bytes: Uint8Array, mimeType: string, filename?: string): Media {
    const m = { id: `${1000 + this.n++}`, bytes, mimeType, ...(filename && { filename }) };
    this.media.set(m.id, m);
    return m;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.url);
    const raw = await readBody(req);
    const record = (status: number, body: Record<string, unknown> = {}) => this.recorder.record({ method: req.method ?? "", path: url.pathname, body, status, at: Date.now() });
    if (req.headers.authorization !== `Bearer ${this.accessToken}`) {
      record(401);
      return json(res, 401, { error: { message: "Invalid OAuth access token - Cannot parse access token", type: "OAuthException", code: 190 } });
    }
    const download = /^\/media-download\/(\w+)$/.exec(url.pathname);
    if (download) {
      const m = this.media.get(download[1]!);
      record(m ? 200 : 404);
      if (!m) return json(res, 404, { error: { message: "not found", code: 100 } });
      res.writeHead(200, { "content-type": m.mimeType, "content-length": m.bytes.length });
      return void res.end(Buffer.from(m.bytes));
    }
    const prefix = `/${this.version}/`;
    if (!url.pathname.startsWith(prefix)) return json(res, 404, { error: { message: "Unknown path", code: 100 } });
    const rest = url.pathname.slice(prefix.length);
    if (req.method === "GET") {
      const m = this.media.get(rest);
      record(m ? 200 : 404);
      if (!m) return json(res, 404, { error: { message: "Unsupported get request", code: 100 } });
      return json(res, 200, { messaging_product: "whatsapp", url: `${this.url}/media-download/${m.id}`, mime_type: m.mimeType, sha256: "x", file_size: m.bytes.length, id: m.id });
    }
    if (rest === `${this.phoneNumberId}/media`) {
      const form = await new Request("http://fake/", { method: "POST", headers: { "content-type": req.headers["content-type"] ?? "" }, body: raw }).formData();
      const file = form.get("file");
      if (form.get("messaging_product") !== "whatsapp" || !file || typeof file === "string") {
        record(400);
        return json(res, 400, { error: { message: "(#100) The parameter file is required.", code: 100 } });
      }
      const m = this.storeMedia(new Uint8Array(await file.arrayBuffer()), String(form.get("type") ?? file.type), file.name);
      record(200, { upload: m.filename ?? "", type: m.mimeType });
      return json(res, 200, { id: m.id });
    }
    if (rest !== `${this.phoneNumberId}/messages`) return json(res, 404, { error: { message: "Unknown path", code: 100 } });
    const body = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
    const out = this.message(body);
    record(out.status, body);
    return json(res, out.status, out.body);
  }

  private message(b: Record<string, unknown>): { status: number; body: unknown } {
    const err = (status: number, code: number, message: string) => ({ status, body: { error: { message, type: "OAuthException", code, error_data: { messaging_product: "whatsapp", details: message } } } });
    if (b.messaging_product !== "whatsapp") return err(400, 100, "(#100) The parameter messaging_product is required.");
    if (b.status === "read") {
      this.reads.push({ messageId: String(b.message_id), typing: !!b.typing_indicator, at: Date.now() });
      return { status: 200, body: { success: true } };
    }
    if (this.limited > 0) {
      this.limited--;
      return err(429, 130429, "(#130429) Rate limit hit");
    }
    const to = String(b.to ?? "");
    const last = this.lastInbound.get(to);
    if (last === undefined || Date.now() - last > WINDOW_MS) {
      const why = "(#131047) Re-engagement message: more than 24 hours have passed since the recipient last replied to the sender number.";
      if (!this.windowErrorsLater) return err(400, 131047, why);
      const id = `wamid.OUT${this.n++}`;
      this.failedLater.push(id);
      setTimeout(() => void this.postStatus({ id, status: "failed", timestamp: String(Math.floor(Date.now() / 1000)), recipient_id: to, errors: [{ code: 131047, title: "Re-engagement message", message: why }] }), 50);
      return { status: 200, body: { messaging_product: "whatsapp", contacts: [{ input: to, wa_id: to }], messages: [{ id }] } };
    }
    const sent: WaSent = { id: `wamid.OUT${this.n++}`, to, type: String(b.type), at: Date.now(), ...((b.context as { message_id?: string })?.message_id && { context: (b.context as { message_id: string }).message_id }) };
    if (b.type === "text") {
      const text = (b.text as { body?: string })?.body ?? "";
      if (!text.trim()) return err(400, 100, "(#100) Param text['body'] is required");
      if ([...text].length > 4096) return err(400, 100, "(#100) Param text['body'] must be at most 4096 characters long.");
      sent.text = text;
    } else if (b.type === "document") {
      const d = b.document as { id?: string; filename?: string; caption?: string };
      if (!d?.id || !this.media.has(d.id)) return err(400, 131053, "(#131053) Media upload error");
      sent.document = { id: d.id, ...(d.filename && { filename: d.filename }), ...(d.caption && { caption: d.caption }) };
    } else if (b.type === "interactive") {
      const i = b.interactive as { type?: string; body?: { text?: string }; action?: { buttons?: Array<{ type: string; reply: { id: string; title: string } }> } };
      const text = i?.body?.text ?? "";
      const buttons = i?.action?.buttons ?? [];
      if (i?.type !== "button") return err(400, 100, "(#100) the fake knows interactive type button only");
      if (!text || [...text].length > 1024) return err(400, 100, "(#100) Param interactive['body']['text'] must be between 1 and 1024 characters long.");
      if (!buttons.length || buttons.length > 3) return err(400, 100, "(#100) Param interactive['action']['buttons'] must contain 1 to 3 buttons.");
      for (const btn of buttons) {
        if ([...btn.reply.title].length > 20) return err(400, 100, "(#100) Param interactive['action']['buttons'][0]['reply']['title'] must be at most 20 characters long.");
        if (btn.reply.id.length > 256) return err(400, 100, "(#100) button id too long");
      }
      if (new Set(buttons.map((x) => x.reply.id)).size !== buttons.length) return err(400, 100, "(#100) Button ids must be unique.");
      sent.text = text;
      sent.buttons = buttons.map((x) => x.reply);
    } else return err(400, 100, `(#100) the fake does not send type ${String(b.type)}`);
    this.sent.push(sent);
    return { status: 200, body: { messaging_product: "whatsapp", contacts: [{ input: to, wa_id: to }], messages: [{ id: sent.id }] } };
  }

  /** The bytes of a media id (uploaded by the bot or sent by a person). */
  mediaBytes(id: string): { bytes: Uint8Array; mimeType: string; filename?: string } | undefined {
    return this.media.get(id);
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

export async function startFakeWhatsApp(o: FakeWhatsAppOptions = {}): Promise<FakeWhatsApp> {
  return new FakeWhatsApp(o).start();
}
