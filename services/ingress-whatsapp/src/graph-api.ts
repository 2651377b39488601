import { backoffMs, type Downloaded, downloadFile, metrics, waitOutRateLimits } from "@mom/ingress-sdk";
import type { Logger } from "pino";
import { DEFAULT_GRAPH_VERSION, type WhatsAppSettings } from "./whatsapp-options.js";

/** A Graph API error answer: `{ error: { code, message } }`. */
export class GraphError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** Error codes that mean "too many messages now": wait and send again. */
const RATE_LIMITED = new Set([4, 80007, 130429, 131048, 131056]);
/** The recipient's last message is older than 24 hours: only template messages may be sent. */
export const WINDOW_CLOSED = 131047;

/** The WhatsApp Cloud API calls mom makes: send, mark read, upload and fetch media. */
export class GraphApi {
  constructor(
    private readonly s: WhatsAppSettings,
    private readonly adapter: string,
    private readonly log: Logger,
  ) {}

  /** One call; rate limits (HTTP 429 or their error codes) are waited out for `retryForMs`. */
  private call<T>(path: string, init: RequestInit): Promise<T> {
    const call = async () => {
      const res = await fetch(`${this.s.apiUrl ?? "https://graph.facebook.com"}/${this.s.graphVersion ?? DEFAULT_GRAPH_VERSION}/${path}`, { ...init, headers: { ...init.headers, authorization: `Bearer ${this.s.accessToken}` } });
      const body = (await res.json().catch(() => ({}))) as { error?: { code?: number; message?: string } };
      if (res.ok) return body as T;
      throw new GraphError(res.status, body.error?.code ?? 0, body.error?.message ?? `HTTP ${res.status}`);
    };
    const isRateLimited = (err: unknown) => err instanceof GraphError && (err.status === 429 || RATE_LIMITED.has(err.code));
    return waitOutRateLimits(call, {
      retryAfterMs: (err, attempt) => (isRateLimited(err) ? backoffMs(attempt) : undefined),
      limited: (waitMs, err) => {
        metrics.platformRateLimits.inc({ adapter: this.adapter });
        this.log.warn({ path, waitMs, err }, "platform rate limit: waiting before calling again");
      },
      maxTries: 20,
      giveUpAfterMs: this.s.rateLimitRetryMs ?? 120_000,
      ...(init.signal && { signal: init.signal }),
    });
  }

  /** POST /<phone number id>/messages; resolves with the new message id. */
  async send(body: Record<string, unknown>): Promise<string> {
    const r = await this.call<{ messages?: Array<{ id: string }> }>(`${this.s.phoneNumberId}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messaging_product: "whatsapp", ...body }),
    });
    return r.messages?.[0]?.id ?? "";
  }

  /** Blue ticks on a message someone sent, and "typing…" when asked. */
  async markRead(messageId: string, typing: boolean): Promise<void> {
    await this.send({ status: "read", message_id: messageId, ...(typing && { typing_indicator: { type: "text" } }) });
  }

  async uploadMedia(bytes: Uint8Array, mimeType: string, filename: string): Promise<string> {
    const form = new FormData();
    form.set("messaging_product", "whatsapp");
    form.set("type", mimeType);
    form.set("file", new Blob([bytes], { type: mimeType }), filename);
    const r = await this.call<{ id: string }>(`${this.s.phoneNumberId}/media`, { method: "POST", body: form });
    return r.id;
  }

  /** A media id -> its bytes (the URL Meta gives needs the token too). */
  async download(mediaId: string, maxBytes: number, signal?: AbortSignal): Promise<Downloaded> {
    const info = await this.call<{ url: string; mime_type?: string }>(mediaId, { method: "GET", ...(signal && { signal }) });
    return downloadFile(info.url, maxBytes, { token: this.s.accessToken, signal, ...(info.mime_type && { mimeType: info.mime_type }) });
  }
}
