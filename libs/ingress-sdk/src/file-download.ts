import { FileRefused, readDownload } from "@mom/render";

/** A file's bytes as a download gives them, and its type when known. */
export interface Downloaded {
  bytes: Uint8Array;
  mimeType?: string;
}

export interface DownloadOptions {
  /** Sent as `Authorization: Bearer <token>`: platforms that keep files behind the bot's token. */
  token?: string;
  /** The type the platform's message declared; preferred over the response's Content-Type. */
  mimeType?: string;
  /** Why a successful response is still not the file (a sign-in page), or undefined when it is. */
  refuse?(res: Response): string | undefined;
  /** Ends the download (the shell's, when it took too long: IncomingFile.download's `signal`). */
  signal?: AbortSignal | undefined;
}

/**
 * Fetches a file someone shared, stopping past `maxBytes` (`readDownload`). Throws a FileRefused
 * saying why it cannot be had: the HTTP status, too large, or what `refuse` says.
 */
export async function downloadFile(url: string, maxBytes: number, o: DownloadOptions = {}): Promise<Downloaded> {
  const res = await fetch(url, { ...(o.token && { headers: { authorization: `Bearer ${o.token}` } }), ...(o.signal && { signal: o.signal }) });
  const refused = res.ok ? o.refuse?.(res) : undefined;
  if (refused) {
    await res.body?.cancel();
    throw new FileRefused(refused);
  }
  const got = await readDownload(res, maxBytes);
  const mimeType = o.mimeType || got.mimeType;
  return { bytes: got.bytes, ...(mimeType && { mimeType }) };
}
