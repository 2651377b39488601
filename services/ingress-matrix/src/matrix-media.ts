import { type Downloaded, FileRefused, readDownload, waitOutRateLimits } from "@mom/ingress-sdk";
import { type MomMatrixClient, retryAfterMs } from "./matrix-client.js";

/**
 * Downloads of `mxc://` media, streamed and cut off past the size limit (matrix-bot-sdk's
 * `downloadContent` buffers a whole file, however large). Authenticated media
 * (`/_matrix/client/v1/media/download`, Matrix 1.11) first; a homeserver that does not know it
 * (`M_UNRECOGNIZED`) is asked on the legacy `/_matrix/media/v3/download` path from then on.
 */
export class MediaDownloads {
  private authenticated = true;

  constructor(private readonly client: MomMatrixClient) {}

  download(mxc: string, maxBytes: number, signal?: AbortSignal): Promise<Downloaded> {
    const m = /^mxc:\/\/([^/]+)\/([^/?#]+)$/.exec(mxc);
    if (!m) return Promise.reject(new FileRefused(`not a media URI: ${mxc}`));
    const serverAndId = `${encodeURIComponent(m[1]!)}/${encodeURIComponent(m[2]!)}`;
    return waitOutRateLimits(() => this.fetch(serverAndId, maxBytes, signal), { retryAfterMs, limited: (waitMs) => this.client.limited(waitMs, mxc), ...(signal && { signal }) });
  }

  private async fetch(serverAndId: string, maxBytes: number, signal: AbortSignal | undefined): Promise<Downloaded> {
    for (;;) {
      const path = this.authenticated ? "client/v1/media" : "media/v3";
      const res = await fetch(`${this.client.homeserverUrl.replace(/\/+$/, "")}/_matrix/${path}/download/${serverAndId}`, { headers: { authorization: `Bearer ${this.client.accessToken}` }, signal });
      if (res.ok) return readDownload(res, maxBytes);
      const err = await failure(res);
      if (!this.authenticated || err.errcode !== "M_UNRECOGNIZED") throw err;
      this.authenticated = false;
    }
  }
}

/** A failed media response as an error that says why (and, for a 429, how long to wait). */
async function failure(res: Response): Promise<FileRefused & { errcode?: string; statusCode: number; retryAfterMs?: number }> {
  const body = (await res.json().catch(() => ({}))) as { errcode?: unknown; error?: unknown; retry_after_ms?: unknown };
  const errcode = typeof body.errcode === "string" ? body.errcode : undefined;
  const err = new FileRefused(`download failed: HTTP ${res.status}${errcode ? ` ${errcode}` : ""}${typeof body.error === "string" ? ` (${body.error})` : ""}`);
  return Object.assign(err, { statusCode: res.status, ...(errcode && { errcode }), ...(typeof body.retry_after_ms === "number" && { retryAfterMs: body.retry_after_ms }) });
}
