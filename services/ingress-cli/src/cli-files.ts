import { formatSizeOverLimit, guessMimeType, type IncomingFile } from "@mom/ingress-sdk";
import { readFile, stat } from "node:fs/promises";
import { basename, resolve } from "node:path";

/** `/attach <path> [message text]` -> its parts; undefined for any other line. */
export function parseAttachCommand(line: string): { path: string; text: string } | undefined {
  const m = /^\/attach(?:\s+(\S+)\s*([\s\S]*))?$/.exec(line.trim());
  if (!m) return undefined;
  return { path: m[1] ?? "", text: (m[2] ?? "").trim() };
}

/**
 * Reads a file the user wants to send, as the file of a message (its bytes in hand); throws an
 * Error saying what is wrong with it ("no such file").
 */
export async function readUpload(path: string, cwd: string, maxBytes: number): Promise<IncomingFile & { size: number }> {
  const full = resolve(cwd, path);
  const st = await stat(full).catch((err: NodeJS.ErrnoException) => {
    throw err.code === "ENOENT" ? new Error("no such file") : err;
  });
  if (st.isDirectory()) throw new Error("is a directory");
  if (!st.isFile()) throw new Error("not a regular file");
  // Said before anything is read or sent; a file that grows meanwhile is caught by the shell's import.
  if (st.size > maxBytes) throw new Error(`too large (${formatSizeOverLimit(st.size, maxBytes)})`);
  const bytes = new Uint8Array(await readFile(full));
  const filename = basename(full);
  const mimeType = guessMimeType(filename);
  return { filename, size: bytes.length, ...(mimeType && { mimeType }), download: async () => ({ bytes }) };
}
