import { FileRefused, readDownload } from "@mom/ingress-sdk";
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
  if (file.mode === "tombstone" || file.mode === "hidden_by_limit") throw new FileRefused("not available in Slack any more");
  if (file.mode === "external") throw new FileRefused("an external file (not stored in Slack)");
  const url = file.url_private_download ?? file.url_private;
  if (!url) throw new FileRefused("Slack gave no download URL");
  const res = await fetch(url, { headers: { Authorization: `Bearer ${botToken}` }, redirect: "follow" });
  const type = res.headers.get("content-type") ?? "";
  if (res.ok && type.startsWith("text/html") && !(file.mimetype ?? "").startsWith("text/html")) {
    await res.body?.cancel();
    throw new FileRefused("Slack answered with its sign-in page (does the bot token have the files:read scope?)");
  }
  const got = await readDownload(res, maxBytes);
  const mimeType = file.mimetype || got.mimeType;
  return { bytes: got.bytes, ...(mimeType && { mimeType }) };
}
