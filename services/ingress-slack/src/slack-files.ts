import { formatSizeOverLimit } from "@mom/store";
import type { SlackFile } from "./slack-inbound.js";

export interface DownloadedFile {
  bytes: Uint8Array;
  mimeType?: string;
}

/**
 * Downloads a file someone shared, with the bot token (scope files:read). Throws an Error saying
 * why it cannot (too large, not downloadable, Slack answered with its sign-in page).
 */
export async function downloadSlackFile(file: SlackFile, botToken: string, maxBytes: number): Promise<DownloadedFile> {
  if (file.mode === "tombstone" || file.mode === "hidden_by_limit") throw new Error("not available in Slack any more");
  if (file.mode === "external") throw new Error("an external file (not stored in Slack)");
  if (file.size !== undefined && file.size > maxBytes) throw new Error(`too large: ${formatSizeOverLimit(file.size, maxBytes)}`);
  const url = file.url_private_download ?? file.url_private;
  if (!url) throw new Error("Slack gave no download URL");
  const res = await fetch(url, { headers: { Authorization: `Bearer ${botToken}` }, redirect: "follow" });
  if (res.status !== 200) throw new Error(`download failed: HTTP ${res.status}`);
  const type = res.headers.get("content-type") ?? "";
  if (type.startsWith("text/html") && !(file.mimetype ?? "").startsWith("text/html")) {
    await res.body?.cancel();
    throw new Error("Slack answered with its sign-in page (does the bot token have the files:read scope?)");
  }
  const declared = Number(res.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel();
    throw new Error(`too large: ${formatSizeOverLimit(declared, maxBytes)}`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (res.body) {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.length;
      if (size > maxBytes) throw new Error(`too large: ${formatSizeOverLimit(size, maxBytes)}`);
      chunks.push(chunk);
    }
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) bytes.set(c, at), (at += c.length);
  const mimeType = file.mimetype || (type ? type.split(";")[0]!.trim() : undefined);
  return { bytes, ...(mimeType && { mimeType }) };
}
