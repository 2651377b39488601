import type { FileSource } from "@mom/ingress-sdk";
import type { OutboundEvent } from "@mom/ingress-sdk";
import { formatSizeOverLimit, guessMimeType, safeFileName, writeNewFile } from "@mom/ingress-sdk";
import { readFile, stat } from "node:fs/promises";
import { basename, join, resolve } from "node:path";

type AttachmentEvent = Extract<OutboundEvent["event"], { type: "attachment" }>;

/** `/attach <path> [message text]` -> its parts; undefined for any other line. */
export function parseAttachCommand(line: string): { path: string; text: string } | undefined {
  const m = /^\/attach(?:\s+(\S+)\s*([\s\S]*))?$/.exec(line.trim());
  if (!m) return undefined;
  return { path: m[1] ?? "", text: (m[2] ?? "").trim() };
}

export interface Upload {
  bytes: Uint8Array;
  filename: string;
  mimeType?: string;
  size: number;
}

/** Reads a file the user wants to send; throws an Error saying what is wrong with it ("no such file"). */
export async function readUpload(path: string, cwd: string, maxBytes: number): Promise<Upload> {
  const full = resolve(cwd, path);
  let size: number;
  try {
    const st = await stat(full);
    if (st.isDirectory()) throw new Error("is a directory");
    if (!st.isFile()) throw new Error("not a regular file");
    size = st.size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new Error("no such file");
    throw err;
  }
  if (size > maxBytes) throw new Error(`too large (${formatSizeOverLimit(size, maxBytes)})`);
  const bytes = await readFile(full);
  if (bytes.length > maxBytes) throw new Error(`too large (${formatSizeOverLimit(bytes.length, maxBytes)})`);
  const filename = basename(full);
  const mimeType = guessMimeType(filename);
  return { bytes: new Uint8Array(bytes), filename, size: bytes.length, ...(mimeType && { mimeType }) };
}

/**
 * Saves a file mom attached into `dir` under its (sanitised) name, `name-2.ext` etc. when taken.
 * Returns the full path; throws when the object is gone or larger than `maxBytes`.
 */
export async function saveDownload(files: FileSource, dir: string, ev: AttachmentEvent, maxBytes: number): Promise<string> {
  const bytes = await files.getFile(ev.objectKey, { maxBytes });
  if (!bytes) throw new Error("not found in the object store (expired?)");
  const name = await writeNewFile(dir, safeFileName(ev.filename), bytes);
  return join(dir, name);
}
