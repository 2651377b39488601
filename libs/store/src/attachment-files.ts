import { mkdir } from "node:fs/promises";
import { extname } from "node:path";
import { writeNewFileBeneath } from "./beneath.js";

const MAX_NAME_LENGTH = 120;

/**
 * A file name that is safe to create in a directory of ours, from whatever a platform or a user
 * called the file: only the last path segment survives (no directories, no `..`), characters
 * outside letters, digits, `.`, `-`, `_`, `+`, `@`, `,`, `=` and space become `_`, leading dots and
 * spaces go (no hidden files), the name is capped at 120 characters keeping its extension, and
 * nothing usable left gives `file`. Non-ASCII letters are kept (`Bericht-März.pdf`).
 */
export function safeFileName(name: string): string {
  const last = name.split(/[/\\]/).filter(Boolean).at(-1) ?? "";
  let s = last
    .normalize("NFC")
    .replace(/[^\p{L}\p{N}.\-_+@,= ]/gu, "_")
    .replace(/_{2,}/g, "_")
    .replace(/^[.\s]+/, "")
    .trim();
  if (!/[\p{L}\p{N}]/u.test(s)) return "file";
  if (s.length > MAX_NAME_LENGTH) {
    const ext = extname(s).slice(0, 20);
    s = s.slice(0, MAX_NAME_LENGTH - ext.length) + ext;
  }
  return s;
}

/**
 * Writes `bytes` to a new file in `dir` named `name`, or `name-2.ext`, `name-3.ext`, … when that
 * exists: the existing file is never overwritten (exclusive create, so concurrent writers cannot
 * race into one name), and never through a symlink (see writeNewFileBeneath). `name` must
 * already be safe (see safeFileName). Returns the file name used. For a directory a channel's
 * agent can change, use writeNewFileBeneath with the channel's directory as the root.
 */
export async function writeNewFile(dir: string, name: string, bytes: Uint8Array): Promise<string> {
  await mkdir(dir, { recursive: true });
  return writeNewFileBeneath(dir, ".", name, bytes);
}

const MIME_BY_EXTENSION: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".svg": "image/svg+xml",
  ".pdf": "application/pdf",
  ".txt": "text/plain",
  ".md": "text/markdown",
  ".csv": "text/csv",
  ".json": "application/json",
  ".html": "text/html",
  ".xml": "application/xml",
  ".zip": "application/zip",
  ".gz": "application/gzip",
  ".tar": "application/x-tar",
  ".mp3": "audio/mpeg",
  ".mp4": "video/mp4",
};

/** A MIME type from the file extension, for the common cases; undefined when unknown. */
export function guessMimeType(filename: string): string | undefined {
  return MIME_BY_EXTENSION[extname(filename).toLowerCase()];
}

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/**
 * The image type a model can take (png, jpeg, gif, webp), from the MIME type or else the file
 * extension; undefined for anything else.
 */
export function modelImageType(filename: string, mimeType?: string): string | undefined {
  const m = mimeType?.toLowerCase().split(";")[0]?.trim();
  if (m === "image/jpg") return "image/jpeg";
  if (m && IMAGE_TYPES.has(m)) return m;
  const guessed = guessMimeType(filename);
  return guessed && IMAGE_TYPES.has(guessed) ? guessed : undefined;
}

/** `512 bytes`, `12 KB`, `3.4 MB`, `31 MB` (binary units, as people read file sizes). */
export function formatFileSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  const mb = bytes / (1024 * 1024);
  return `${mb < 10 ? Math.round(mb * 10) / 10 : Math.round(mb)} MB`;
}

/** `31 MB > 20 MB limit`; in bytes when rounding would make both sides look the same. */
export function formatSizeOverLimit(size: number, maxBytes: number): string {
  const [a, b] = [formatFileSize(size), formatFileSize(maxBytes)];
  return a === b ? `${size.toLocaleString("en")} bytes > ${maxBytes.toLocaleString("en")} bytes limit` : `${a} > ${b} limit`;
}
