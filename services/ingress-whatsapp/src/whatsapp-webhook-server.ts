import type { IncomingMessage, ServerResponse } from "node:http";
import { replyText, serveWebhook, type WebhookServer } from "@mom/ingress-sdk";
import type { Logger } from "pino";
import getRawBody from "raw-body";
import { WEBHOOK_PATH, type WhatsAppSettings } from "./whatsapp-options.js";
import { validSignature } from "./whatsapp-webhook.js";

/** Meta's posts are a few KB; anything far larger is no webhook post. */
const MAX_BODY = "1mb";

/**
 * The one route Meta calls: GET to verify the URL, POST (signed) with changes; `accept` takes a
 * post whose signature checked out, parsed, and its rejection is answered with its `status`.
 */
export function startWebhookServer(s: WhatsAppSettings, log: Logger, accept: (body: unknown) => Promise<void>): Promise<WebhookServer> {
  /** Meta's handshake: echo `hub.challenge` when `hub.verify_token` is ours. */
  const verify = (q: URLSearchParams, res: ServerResponse) => {
    const mode = q.get("hub.mode");
    const challenge = q.get("hub.challenge");
    if (mode === "subscribe" && q.get("hub.verify_token") === s.verifyToken && challenge) return replyText(res, 200, challenge);
    log.warn({ mode }, "webhook verification refused: wrong hub.verify_token (adapters.<name>.verifyToken)");
    replyText(res, 403, "verification failed");
  };
  /** Changes are accepted once the signature (over the bytes Meta sent) checks out. */
  const receive = async (req: IncomingMessage, res: ServerResponse) => {
    const raw = await getRawBody(req, { limit: MAX_BODY, ...(req.headers["content-length"] && { length: req.headers["content-length"] }) });
    const signature = req.headers["x-hub-signature-256"];
    if (!validSignature(raw, typeof signature === "string" ? signature : undefined, s.appSecret)) {
      log.warn({ signed: signature !== undefined, ip: req.socket.remoteAddress }, "webhook post refused: missing or bad X-Hub-Signature-256");
      return replyText(res, 401, "bad signature");
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString("utf8"));
    } catch (err) {
      log.warn({ err }, "signed webhook post is not JSON");
      return replyText(res, 400, "not JSON");
    }
    await accept(body);
    replyText(res, 200, "ok");
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://webhook");
    if (url.pathname.replace(/\/$/, "") !== WEBHOOK_PATH) return replyText(res, 404, "not found");
    if (req.method === "GET") return verify(url.searchParams, res);
    if (req.method === "POST") return receive(req, res);
    replyText(res, 404, "not found");
  };
  return serveWebhook({ port: s.webhookPort ?? 8080, host: s.webhookHost ?? "0.0.0.0", log, handle });
}
