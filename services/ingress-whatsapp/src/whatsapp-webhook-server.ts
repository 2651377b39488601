import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import getRawBody from "raw-body";
import { WEBHOOK_PATH } from "./whatsapp-options.js";
import { validSignature } from "./whatsapp-webhook.js";

/** Meta's posts are a few KB; anything far larger is no webhook post. */
const MAX_BODY = "1mb";

export interface WebhookServerOptions {
  port: number;
  host: string;
  verifyToken: string;
  appSecret: string;
  log: Logger;
  /** A post whose signature checked out, parsed; handled after Meta has its 200. */
  accept(body: unknown): void;
}

export interface WebhookServer {
  port: number;
  listening(): boolean;
  close(): Promise<void>;
}

/** The one route Meta calls: GET to verify the URL, POST (signed) with changes. Resolves once listening. */
export async function startWebhookServer(o: WebhookServerOptions): Promise<WebhookServer> {
  const server = createServer((req, res) => {
    route(o, req, res).catch((err: unknown) => {
      const status = (err as { status?: number }).status ?? 500;
      o.log.warn({ err, status }, `webhook request failed: ${(err as Error).message}`);
      if (!res.headersSent) send(res, status, status === 413 ? "too large" : "error");
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    listening: () => server.listening,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function send(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8" }).end(text);
}

async function route(o: WebhookServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://webhook");
  if (url.pathname.replace(/\/$/, "") !== WEBHOOK_PATH) return send(res, 404, "not found");
  if (req.method === "GET") return verify(o, url.searchParams, res);
  if (req.method === "POST") return receive(o, req, res);
  send(res, 404, "not found");
}

/** Meta's handshake: echo `hub.challenge` when `hub.verify_token` is ours. */
function verify(o: WebhookServerOptions, q: URLSearchParams, res: ServerResponse): void {
  const mode = q.get("hub.mode");
  const challenge = q.get("hub.challenge");
  if (mode === "subscribe" && q.get("hub.verify_token") === o.verifyToken && challenge) return send(res, 200, challenge);
  o.log.warn({ mode }, "webhook verification refused: wrong hub.verify_token (adapters.<name>.verifyToken)");
  send(res, 403, "verification failed");
}

/** Changes are accepted once the signature (over the bytes Meta sent) checks out. */
async function receive(o: WebhookServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const raw = await getRawBody(req, { limit: MAX_BODY, ...(req.headers["content-length"] && { length: req.headers["content-length"] }) });
  const signature = req.headers["x-hub-signature-256"];
  if (!validSignature(raw, typeof signature === "string" ? signature : undefined, o.appSecret)) {
    o.log.warn({ signed: signature !== undefined, ip: req.socket.remoteAddress }, "webhook post refused: missing or bad X-Hub-Signature-256");
    return send(res, 401, "bad signature");
  }
  let body: unknown;
  try {
    body = JSON.parse(raw.toString("utf8"));
  } catch (err) {
    o.log.warn({ err }, "signed webhook post is not JSON");
    return send(res, 400, "not JSON");
  }
  o.accept(body);
  send(res, 200, "ok");
}
