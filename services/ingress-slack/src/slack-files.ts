import { type Downloaded, downloadFile, FileRefused } from "@mom/ingress-sdk";
import type { SlackFile } from "./slack-inbound.js";

/**
 * Downloads a file someone shared, with the bot token (scope files:read). Throws an Error saying
 * why it cannot (too large, not downloadable, Slack answered with its sign-in page).
 */
export async function downloadSlackFile(file: SlackFile, botToken: string, maxBytes: number, signal?: AbortSignal): Promise<Downloaded> {
  if (file.mode === "tombstone" || file.mode === "hidden_by_limit") throw new FileRefused("not available in Slack any more");
  if (file.mode === "external") throw new FileRefused("an external file (not stored in Slack)");
  const url = file.url_private_download ?? file.url_private;
  if (!url) throw new FileRefused("Slack gave no download URL");
  const signIn = (res: Response) => (res.headers.get("content-type") ?? "").startsWith("text/html") && !(file.mimetype ?? "").startsWith("text/html");
  return downloadFile(url, maxBytes, {
    token: botToken,
    signal,
    ...(file.mimetype && { mimeType: file.mimetype }),
    refuse: (res) => (signIn(res) ? "Slack answered with its sign-in page (does the bot token have the files:read scope?)" : undefined),
  });
}
