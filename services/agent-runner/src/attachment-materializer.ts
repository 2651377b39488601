import { fileBelongsTo, type FileSource, FileTooLargeError } from "@mom/bus";
import type { Attachment, ChannelMessage, ChannelRef, LogEntry } from "@mom/contracts";
import { formatSizeOverLimit, guessMimeType, safeFileName, writeNewFileBeneath } from "@mom/store";
import { join, relative, sep } from "node:path";
import type { Logger } from "pino";

/** What the materialiser needs of a channel's store (ChannelStore implements it). */
export interface MaterializeStore {
  readonly ref: ChannelRef;
  /** The channel's directory: files go into its attachments/, never through a symlink (@mom/store's beneath.ts). */
  readonly dir: string;
  /** A recently logged entry by id (the log's tail): how a message read again keeps its files. */
  findLogEntry(id: string): Promise<LogEntry | undefined>;
  /** Throws when this runner may no longer write the channel's files (its fencing check). */
  readonly writeGuard?: () => void;
}

export interface MaterializeDeps {
  /** Where the ingress put the bytes (the bus's files bucket). */
  files: FileSource;
  store: MaterializeStore;
  /** localPath is relative to this directory. */
  workspaceDir: string;
  /** config `attachments.maxBytes`: larger files are not fetched. */
  maxBytes: number;
  log: Logger;
}

/**
 * Brings a message's attachments from the Object Store into the channel's `attachments/`
 * directory, before the message is logged, so log.jsonl records where they are.
 *
 * - File name: `<message time in ms>-<sanitised filename>` (e.g. `1732184400000-report.pdf`);
 *   when that exists, `-2`, `-3`, … before the extension. Nothing is ever overwritten, and nothing
 *   is written outside the channel's directory: an `attachments` (or a file in it) that the agent
 *   made a symlink, FIFO or anything but a directory is refused, and the file gets a note
 *   ("could not be saved: attachments: is a symlink …") that the model reads with the message.
 * - `localPath` is workspace-relative with `/` separators
 *   (`channels/slack-acme/C0A34FL8PMH/attachments/1732184400000-report.pdf`), as in the contract.
 * - A file larger than `maxBytes` (by the size the ingress gave, the stored size or the bytes
 *   read), one missing from the store (expired, never put) or one that cannot be fetched or
 *   written is not written: it keeps `localPath: ""` and gets a `note` saying why. Never throws.
 * - A `localPath` set by the sender is cleared: only the runner decides where files are.
 * - An `objectKey` outside this channel's part of the bucket (`fileObjectName`) is refused with a
 *   note and never read: a message must not fetch another channel's file.
 * - A redelivered message that is already logged gets the attachments that were logged, so a
 *   redelivery does not write the files twice.
 */
export async function materializeAttachments(message: ChannelMessage, deps: MaterializeDeps): Promise<ChannelMessage> {
  // Only the runner sets localPath: one that arrives on the bus would point the agent at any file.
  if (message.attachments.some((a) => a.localPath)) {
    deps.log.warn({ msgId: message.id }, "inbound attachment came with a localPath; ignored");
    message = { ...message, attachments: message.attachments.map((a) => (a.localPath ? { ...a, localPath: "" } : a)) };
  }
  if (!message.attachments.some(needsFetch)) return message;
  try {
    const logged = await deps.store.findLogEntry(message.id);
    if (logged) return { ...message, attachments: logged.attachments };
  } catch (err) {
    deps.log.warn({ err, msgId: message.id }, "could not read the log to check for an earlier copy of this message");
  }
  const stamp = Number.isFinite(Date.parse(message.timestamp)) ? Date.parse(message.timestamp) : Date.now();
  const attachments: Attachment[] = [];
  for (const a of message.attachments) attachments.push(needsFetch(a) ? await fetchOne(a, stamp, deps, message.id) : a);
  return { ...message, attachments };
}

function needsFetch(a: Attachment): a is Attachment & { objectKey: string } {
  return a.objectKey !== undefined && !a.localPath && a.note === undefined;
}

function tooLarge(size: number, maxBytes: number): string {
  return `too large: ${formatSizeOverLimit(size, maxBytes)}`;
}

async function fetchOne(a: Attachment & { objectKey: string }, stamp: number, deps: MaterializeDeps, msgId: string): Promise<Attachment> {
  const { files, maxBytes } = deps;
  const log = deps.log.child({ msgId, objectKey: a.objectKey });
  const unavailable = (note: string): Attachment => {
    log.warn({ filename: a.filename, note }, "attachment not materialised");
    return { ...a, localPath: "", note };
  };
  if (!fileBelongsTo(deps.store.ref, a.objectKey)) return unavailable("refused: the file belongs to another channel");
  if (a.size !== undefined && a.size > maxBytes) return unavailable(tooLarge(a.size, maxBytes));
  let bytes: Uint8Array | undefined;
  let storedType: string | undefined;
  try {
    const info = await files.fileInfo(a.objectKey);
    if (!info) return unavailable("not found in the object store");
    if (info.size > maxBytes) return unavailable(tooLarge(info.size, maxBytes));
    storedType = info.mimeType;
    bytes = await files.getFile(a.objectKey, { maxBytes });
  } catch (err) {
    if (err instanceof FileTooLargeError) return unavailable(tooLarge(err.size, maxBytes));
    return unavailable(`could not be fetched: ${(err as Error).message}`);
  }
  if (!bytes) return unavailable("not found in the object store");
  if (bytes.length > maxBytes) return unavailable(tooLarge(bytes.length, maxBytes));
  // Fenced: not a file that "could not be saved" — the message is the next owner's to take in.
  deps.store.writeGuard?.();
  try {
    const name = await writeNewFileBeneath(deps.store.dir, "attachments", `${stamp}-${safeFileName(a.filename)}`, bytes);
    const localPath = relative(deps.workspaceDir, join(deps.store.dir, "attachments", name)).split(sep).join("/");
    const mimeType = a.mimeType ?? storedType ?? guessMimeType(a.filename);
    log.debug({ localPath, size: bytes.length }, "attachment materialised");
    return { ...a, localPath, size: bytes.length, ...(mimeType !== undefined && { mimeType }) };
  } catch (err) {
    return unavailable(`could not be saved: ${(err as Error).message}`);
  }
}

/**
 * The worker's `materialize` for one channel: calls resolve in call order, so a message whose
 * files take a while to fetch is still logged before the messages that came after it.
 */
export function channelMaterializer(deps: MaterializeDeps): (message: ChannelMessage) => Promise<ChannelMessage> {
  let tail: Promise<unknown> = Promise.resolve();
  return (message) => {
    const result = tail.then(() => materializeAttachments(message, deps));
    tail = result.catch(() => undefined);
    return result;
  };
}
