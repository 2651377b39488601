import { downloadFile, FileRefused, type IncomingFile } from "@mom/ingress-sdk";
import type { WebClient } from "@slack/web-api";
import type { SlackFile } from "./slack-inbound.js";

/**
 * A file of a message, for the shell to download with the bot token (scope files:read). One shared
 * from another organization into a Slack Connect channel comes as a stub (`file_access:
 * "check_file_info"`: no name, type or URL) that files.info describes. The download throws a
 * FileRefused saying why a file cannot be had (gone, external, undescribed, Slack's sign-in page).
 */
export async function slackFile(client: WebClient, shared: SlackFile, botToken: string): Promise<IncomingFile> {
  let file = shared;
  let undescribed: string | undefined;
  if (file.file_access === "check_file_info" && file.id) {
    try {
      file = { ...file, ...(await client.files.info({ file: file.id })).file };
    } catch (err) {
      undescribed = `a Slack Connect file Slack would not describe (files.info: ${(err as Error).message})`;
    }
  }
  const download = async (maxBytes: number, signal?: AbortSignal) => {
    if (undescribed) throw new FileRefused(undescribed);
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
  };
  return {
    filename: file.name || file.title || file.id || "file",
    ...(file.size !== undefined && { size: file.size }),
    ...(file.mimetype && { mimeType: file.mimetype }),
    download,
  };
}
