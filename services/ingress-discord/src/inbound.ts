import { fileObjectName } from "@mom/bus";
import type { Attachment, ChannelRef } from "@mom/contracts";
import { formatSizeOverLimit, guessMimeType } from "@mom/store";

/** What the ingress needs to know of a Discord attachment. */
export interface DiscordFile {
  name: string;
  url: string;
  size: number;
  contentType?: string | null;
}

export interface FileSink {
  putFile(name: string, bytes: Uint8Array, meta?: { mimeType?: string }): Promise<unknown>;
}

/**
 * Brings a Discord attachment into the files bucket and describes it for the ChannelMessage.
 * A file over `maxBytes` (by Discord's size or the bytes read) or one that cannot be downloaded
 * is not stored: it is listed with a `note` saying why, so the agent knows it was sent. Never throws.
 */
export async function importAttachment(
  file: DiscordFile,
  ref: ChannelRef,
  deps: { files: FileSink; maxBytes: number; fetch?: typeof fetch },
): Promise<Attachment> {
  const mimeType = file.contentType?.split(";")[0]?.trim() || guessMimeType(file.name);
  const base: Attachment = { filename: file.name, localPath: "", size: file.size, ...(mimeType && { mimeType }) };
  if (file.size > deps.maxBytes) return { ...base, note: `too large: ${formatSizeOverLimit(file.size, deps.maxBytes)}` };
  try {
    const res = await (deps.fetch ?? fetch)(file.url);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (bytes.length > deps.maxBytes) return { ...base, size: bytes.length, note: `too large: ${formatSizeOverLimit(bytes.length, deps.maxBytes)}` };
    const objectKey = fileObjectName(ref, file.name);
    await deps.files.putFile(objectKey, bytes, mimeType ? { mimeType } : {});
    return { ...base, size: bytes.length, objectKey };
  } catch (err) {
    return { ...base, note: `could not be downloaded from Discord: ${(err as Error).message}` };
  }
}

/** A small set that forgets its oldest entries: message ids seen lately (gateway replays). */
export class RecentIds {
  private readonly ids = new Set<string>();
  constructor(private readonly capacity = 10_000) {}

  /** True the first time an id is seen. */
  add(id: string): boolean {
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.values().next().value!);
    return true;
  }
}

/** A map that forgets its oldest entries. */
export class RecentMap<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly capacity = 10_000) {}

  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value!);
  }

  get(key: string): V | undefined {
    return this.map.get(key);
  }
}
