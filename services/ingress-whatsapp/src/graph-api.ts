import { readDownload } from "@mom/ingress-sdk";
import pRetry from "p-retry";
import type { Logger } from "pino";

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

export interface GraphApiOptions {
  root: string;
  version: string;
  token: string;
  phoneNumberId: string;
  log: Logger;
  /** How long a rate-limited call is retried. */
  retryForMs: number;
  /** Called for each rate-limited attempt (metrics). */
  onRateLimited?: () => void;
}

/** The WhatsApp Cloud API calls mom makes: send, mark read, upload and fetch media. */
export class GraphApi {
  constructor(private readonly o: GraphApiOptions) {}

  private url(path: string): string {
    return `${this.o.root}/${this.o.version}/${path}`;
  }

  /** One call; rate limits (HTTP 429 or their error codes) are retried with backoff for `retryForMs`. */
  private call<T>(path: string, init: RequestInit): Promise<T> {
    const limited = (err: unknown) => err instanceof GraphError && (err.status === 429 || RATE_LIMITED.has(err.code));
    return pRetry(
      async () => {
        const res = await fetch(this.url(path), { ...init, headers: { ...init.headers, authorization: `Bearer ${this.o.token}` } });
        const body = (await res.json().catch(() => ({}))) as { error?: { code?: number; message?: string } };
        if (res.ok) return body as T;
        throw new GraphError(res.status, body.error?.code ?? 0, body.error?.message ?? `HTTP ${res.status}`);
      },
      {
        retries: 10,
        minTimeout: 500,
        maxTimeout: 30_000,
        maxRetryTime: this.o.retryForMs,
        shouldRetry: ({ error }) => limited(error),
        onFailedAttempt: ({ error, attemptNumber }) => {
          if (!limited(error)) return;
          this.o.onRateLimited?.();
          this.o.log.warn({ path, attempt: attemptNumber, code: (error as GraphError).code }, "WhatsApp rate limit: waiting before sending again");
        },
      },
    );
  }

  /** POST /<phone number id>/messages; resolves with the new message id. */
  async send(body: Record<string, unknown>): Promise<string> {
    const r = await this.call<{ messages?: Array<{ id: string }> }>(`${this.o.phoneNumberId}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messaging_product: "whatsapp", ...body }),
    });
    return r.messages?.[0]?.id ?? "";
  }

  /** Blue ticks on a message someone sent, and "typing…" when asked. */
  async markRead(messageId: string, typing: boolean): Promise<void> {
    await this.call(`${this.o.phoneNumberId}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messaging_product: "whatsapp", status: "read", message_id: messageId, ...(typing && { typing_indicator: { type: "text" } }) }),
    });
  }

  async uploadMedia(bytes: Uint8Array, mimeType: string, filename: string): Promise<string> {
    const form = new FormData();
    form.set("messaging_product", "whatsapp");
    form.set("type", mimeType);
    form.set("file", new Blob([bytes], { type: mimeType }), filename);
    const r = await this.call<{ id: string }>(`${this.o.phoneNumberId}/media`, { method: "POST", body: form });
    return r.id;
  }

  /** A media id -> its bytes (the URL Meta gives needs the token too). */
  async download(mediaId: string, maxBytes: number): Promise<{ bytes: Uint8Array; mimeType?: string }> {
    const info = await this.call<{ url: string; mime_type?: string }>(mediaId, { method: "GET" });
    const got = await readDownload(await fetch(info.url, { headers: { authorization: `Bearer ${this.o.token}` } }), maxBytes);
    const mimeType = info.mime_type ?? got.mimeType;
    return { bytes: got.bytes, ...(mimeType && { mimeType }) };
  }
}
