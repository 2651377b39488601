import { type ChannelRef, escapeChannelToken } from "@mom/contracts";
import { JetStreamApiError, type JetStreamClient, type JetStreamManager, StorageType } from "@nats-io/jetstream";
import { nanos } from "@nats-io/nats-core";
import { Objm, type ObjectStore } from "@nats-io/obj";
import { retryTransient } from "./transient.js";
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { DEFAULT_STREAM_SETTINGS, type StreamSettings } from "./options.js";
import { isPermissionDenied } from "./permission.js";
import { warnNotUpdated } from "./provision.js";

// Attachments travel through one JetStream Object Store bucket per namespace (docs/bus.md):
// the ingress puts what people send, the runner puts what the agent attaches; the other side
// reads it back by name. Objects expire with the streams' maxAge.

export interface PutFileMeta {
  mimeType?: string;
  description?: string;
}

export interface PutFileResult {
  name: string;
  size: number;
  /** "SHA-256=<base64url>" as the Object Store computes it. */
  digest: string;
}

export interface FileInfo {
  name: string;
  size: number;
  mimeType?: string;
  description?: string;
}

/** What readers of the bucket need; `Bus` implements it, tests can fake it. */
export interface FileSource {
  /** Size and metadata of the object; undefined when there is no such object (never put, expired, deleted). */
  fileInfo(name: string): Promise<FileInfo | undefined>;
  /** The object's bytes; undefined when missing. Throws FileTooLargeError when it is larger than `maxBytes`. */
  getFile(name: string, opts?: { maxBytes?: number }): Promise<Uint8Array | undefined>;
}

export class FileTooLargeError extends Error {
  override name = "FileTooLargeError";
  constructor(
    readonly objectName: string,
    readonly size: number,
    readonly maxBytes: number,
  ) {
    super(`object ${objectName} is ${size} bytes, more than the limit of ${maxBytes}`);
  }
}

/** `mom` -> `MOM_FILES`, `t-ab12` -> `T_AB12_FILES` (bucket names allow [A-Za-z0-9_-]; the stream is `OBJ_<bucket>`). */
export function filesBucketName(namespace: string): string {
  return `${namespace.toUpperCase().replace(/-/g, "_")}_FILES`;
}

const MAX_NAME_SEGMENT = 200;

/**
 * A fresh object name for a file shared in a channel: `<adapter>/<escaped channel>/<uuid>/<filename>`.
 * Object names may hold any characters (the client base64url-encodes them into subjects); the
 * filename segment only loses path separators and control characters so names stay readable and
 * one segment. The uuid makes every name unique, so an object is never overwritten.
 */
export function fileObjectName(ref: ChannelRef, filename: string): string {
  let seg = filename.replace(/[/\\\u0000-\u001f\u007f]/g, "_").trim();
  if (!seg || seg === "." || seg === "..") seg = "file";
  if (seg.length > MAX_NAME_SEGMENT) seg = seg.slice(seg.length - MAX_NAME_SEGMENT);
  return `${ref.adapter}/${escapeChannelToken(ref.channelId)}/${randomUUID()}/${seg}`;
}

/** Whether an object name is one `fileObjectName` made for this channel (the runner fetches no other). */
export function fileBelongsTo(ref: ChannelRef, objectName: string): boolean {
  return objectName.startsWith(`${ref.adapter}/${escapeChannelToken(ref.channelId)}/`);
}

const STREAM_NAME_IN_USE = 10058;

/**
 * Creates the bucket (TTL = the streams' maxAge, replicas as the streams) or brings an existing
 * one's TTL and replicas in line. Idempotent and safe to race. Returns the opened store.
 */
export async function provisionFilesBucket(
  js: JetStreamClient,
  jsm: JetStreamManager,
  bucket: string,
  settings: StreamSettings | undefined,
  logger: Logger,
): Promise<ObjectStore> {
  const s = { ...DEFAULT_STREAM_SETTINGS, ...settings };
  const want = { ttl: nanos(s.maxAgeMs), replicas: s.replicas, storage: StorageType.File };
  const objm = new Objm(js);
  let store: ObjectStore;
  try {
    store = await retryTransient(`creating object store ${bucket}`, () => objm.create(bucket, { ...want }), logger);
  } catch (err) {
    // Two services raced to create it: the loser's create fails, and the bucket now exists.
    if (!(err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE)) throw err;
    store = await objm.open(bucket);
  }
  const stream = `OBJ_${bucket}`;
  const { config } = await jsm.streams.info(stream);
  const changed: string[] = [];
  if (config.max_age !== want.ttl) changed.push("max_age");
  if (config.num_replicas !== want.replicas) changed.push("num_replicas");
  if (changed.length) {
    try {
      await jsm.streams.update(stream, { max_age: want.ttl, num_replicas: want.replicas });
      logger.info({ bucket, stream, changed }, "object store bucket updated");
    } catch (err) {
      if (!isPermissionDenied(err)) throw err;
      warnNotUpdated(logger, stream, changed);
    }
  }
  return store;
}

/** Reads an object whole, refusing (before reading) one larger than `maxBytes`. */
export async function readObject(store: ObjectStore, name: string, maxBytes?: number): Promise<Uint8Array | undefined> {
  const result = await store.get(name);
  if (!result) return undefined;
  if (maxBytes !== undefined && result.info.size > maxBytes) {
    await result.data.cancel().catch(() => {});
    throw new FileTooLargeError(name, result.info.size, maxBytes);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = result.data.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (!value?.length) continue;
    size += value.length;
    if (maxBytes !== undefined && size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new FileTooLargeError(name, size, maxBytes);
    }
    chunks.push(value);
  }
  const error = await result.error;
  if (error) throw error;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
