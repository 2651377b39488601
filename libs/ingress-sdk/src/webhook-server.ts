import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";

export interface WebhookServerOptions {
  port: number;
  host: string;
  log: Logger;
  /**
   * Answers one request. A rejection is logged and, unless a response was started, answered with
   * the error's `status` (an HTTP error of raw-body or http-errors; default 500).
   */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

/** A running webhook server: its port (useful with port 0), whether it still listens, and how to close it. */
export interface WebhookServer {
  readonly port: number;
  listening(): boolean;
  close(): Promise<void>;
}

/** A plain-text answer. */
export function replyText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8" }).end(text);
}

/**
 * The HTTP server of a platform that posts its events to mom (WhatsApp's Cloud API, a Telegram
 * webhook): resolves once listening, rejects when the address cannot be had, so the ingress's
 * start fails saying why.
 */
export async function serveWebhook(o: WebhookServerOptions): Promise<WebhookServer> {
  const server = createServer((req, res) => {
    o.handle(req, res).catch((err: unknown) => {
      const status = (err as { status?: number }).status ?? 500;
      o.log.warn({ err, status }, `webhook request failed: ${(err as Error).message}`);
      if (!res.headersSent) replyText(res, status, status === 413 ? "too large" : "error");
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
    // Kept-alive connections would hold close() open until the platform gives up on them.
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
