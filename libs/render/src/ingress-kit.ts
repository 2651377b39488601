// What every ingress does with what people send: publish it once, bring its files in, apply the
// DM policy, turn approval clicks into decisions. Platform code only converts.
import { type Bus, fileObjectName } from "@mom/bus";
import type { Attachment, ChannelMessage, ChannelRef, ControlMessage } from "@mom/contracts";
import { endSpan, metrics, SpanKind, startSpan, traceparentOf } from "@mom/observability";
import { formatSizeOverLimit, guessMimeType } from "@mom/store";
import pTimeout from "p-timeout";
import type { Logger } from "pino";
import { ChannelQueue } from "./channel-queue.js";
import type { Dialect } from "./dialect.js";
import { RecentIds } from "./recent.js";
import { notApproverText } from "./notes.js";
import type { PendingApproval } from "./presenter.js";

/** config `attachments.maxBytes` when an ingress is started without it. */
export const DEFAULT_MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024;
/** config `attachments.downloadSeconds`'s default. */
export const DEFAULT_ATTACHMENT_DOWNLOAD_MS = 120_000;

/**
 * The Nats-Msg-Id of an inbound message. Platform ids are unique per chat on some platforms
 * (Telegram), and two bots can see the same message, while JetStream's duplicate window is per
 * stream: adapter, channel and id together are unique everywhere.
 */
export function inboundMsgId(adapter: string, message: Pick<ChannelMessage, "channelId" | "id">): string {
  return `${adapter}:${message.channelId}:${message.id}`;
}

/**
 * Publishes one ChannelMessage on `mom.in.<adapter>.<channel>`; a platform retry within the
 * duplicate window is dropped by JetStream. NATS being away is retried for `retryForMs` (default
 * a minute: platform events must not be lost; the terminal says so at once instead).
 */
export async function publishInbound(bus: Bus, adapter: string, message: ChannelMessage, o: { log?: Logger; retryForMs?: number } = {}): Promise<{ duplicate: boolean }> {
  const ref = { adapter, channelId: message.channelId };
  // The trace of a message starts here; its traceparent rides the NATS headers to the runner.
  const span = startSpan("mom.ingress.receive", { kind: SpanKind.PRODUCER, attributes: { "mom.channel": `${adapter}/${message.channelId}`, "mom.message_id": message.id } });
  let duplicate: boolean;
  try {
    ({ duplicate } = await bus.publish(bus.subjects.channel("in", ref), message, inboundMsgId(adapter, message), { retryForMs: o.retryForMs ?? 60_000, traceparent: traceparentOf(span) }));
  } catch (err) {
    endSpan(span, (err as Error).message);
    throw err;
  }
  endSpan(span, undefined, { "mom.duplicate": duplicate });
  if (!duplicate) metrics.messagesIn.inc({ adapter, source: "ingress" });
  o.log?.debug({ channel: `${adapter}/${message.channelId}`, msgId: message.id, duplicate, isMention: message.isMention }, "message published");
  return { duplicate };
}

/** Who may DM mom, per adapter: admins always; then `dm`: "everyone" (default), "none", or user ids. */
export interface DmPolicy {
  admins?: readonly string[];
  dm?: "everyone" | "none" | readonly string[];
}

export function mayDirectMessage(userId: string, policy: DmPolicy): boolean {
  if (policy.admins?.includes(userId)) return true;
  const dm = policy.dm ?? "everyone";
  if (dm === "everyone") return true;
  if (dm === "none") return false;
  return dm.includes(userId);
}

/** The one line a refused direct message gets. */
export const DM_REFUSAL = "Sorry, I only take direct messages from people my admins have allowed. You can mention me in a channel instead.";

/**
 * A file someone sent, as the platform describes it; `download` fetches at most `maxBytes`, and
 * stops when `signal` aborts (the download took too long: it is given up on either way).
 */
export interface IncomingFile {
  filename: string;
  size?: number;
  mimeType?: string;
  download(maxBytes: number, signal?: AbortSignal): Promise<{ bytes: Uint8Array; mimeType?: string }>;
}

/** Thrown by a download that cannot or may not be done; its message is what the agent is told. */
export class FileRefused extends Error {}

/**
 * Brings a file into the files bucket and describes it for the ChannelMessage. A file over
 * `maxBytes` or one that cannot be downloaded is listed with a `note` saying why, so the agent
 * knows it was sent. A download is given up on after `timeoutMs`: the chat's later messages wait
 * for this one (per-chat order), and a platform's file server that stalls must not hold them for
 * long (fetch alone waits five minutes for headers, and forever for a body that trickles). Never throws.
 */
export async function importAttachment(file: IncomingFile, ref: ChannelRef, deps: { files: Pick<Bus, "putFile">; maxBytes: number; timeoutMs?: number }): Promise<Attachment> {
  const mimeType = file.mimeType?.split(";")[0]?.trim() || guessMimeType(file.filename);
  const base: Attachment = { filename: file.filename, localPath: "", ...(file.size !== undefined && { size: file.size }), ...(mimeType && { mimeType }) };
  if (file.size !== undefined && file.size > deps.maxBytes) return { ...base, note: `too large: ${formatSizeOverLimit(file.size, deps.maxBytes)}` };
  const giveUp = new AbortController();
  const seconds = Math.round((deps.timeoutMs ?? 0) / 100) / 10;
  try {
    const tooLong = new FileRefused(`not downloaded: it took longer than ${seconds} s (attachments.downloadSeconds)`);
    const got = await pTimeout(file.download(deps.maxBytes, giveUp.signal), { milliseconds: deps.timeoutMs ?? Number.POSITIVE_INFINITY, message: tooLong });
    if (got.bytes.length > deps.maxBytes) return { ...base, size: got.bytes.length, note: `too large: ${formatSizeOverLimit(got.bytes.length, deps.maxBytes)}` };
    const type = mimeType ?? got.mimeType;
    const objectKey = fileObjectName(ref, file.filename);
    await deps.files.putFile(objectKey, got.bytes, type ? { mimeType: type } : {});
    return { ...base, size: got.bytes.length, objectKey, ...(type && { mimeType: type }) };
  } catch (err) {
    return { ...base, note: (err as Error).message };
  } finally {
    giveUp.abort();
  }
}

/**
 * Reads an HTTP download, stopping as soon as it passes `maxBytes`. Throws a FileRefused saying
 * why (HTTP status, too large).
 */
export async function readDownload(res: Response, maxBytes: number): Promise<{ bytes: Uint8Array; mimeType?: string }> {
  if (!res.ok) {
    await res.body?.cancel();
    throw new FileRefused(`download failed: HTTP ${res.status}`);
  }
  const declared = Number(res.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel();
    throw new FileRefused(`too large: ${formatSizeOverLimit(declared, maxBytes)}`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of (res.body ?? []) as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > maxBytes) throw new FileRefused(`too large: ${formatSizeOverLimit(size, maxBytes)}`);
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) bytes.set(c, at), (at += c.length);
  const type = res.headers.get("content-type")?.split(";")[0]?.trim();
  return { bytes, ...(type && { mimeType: type }) };
}

export interface ApprovalClick {
  approvalId: string;
  decision: "allow-once" | "deny";
  user: { id: string; username: string };
  /** The bus channel of the prompt, when the presenter no longer knows it (after a restart). */
  channel?: string;
  /**
   * The prompt clicked, as the platform gives it back with the click: the layout's reference to it
   * in `channel` (what `Layout.prompt` resolved with) and its text when known. A prompt of before a
   * restart is then closed with the outcome like any other.
   */
  prompt?: { ref: unknown; text?: string };
}

/**
 * An Allow once / Deny click -> `approval_decision` on mom.ctl. Returns the refusal to show the
 * clicker privately when they may not decide; the click is still sent, and the runner refuses and
 * records it (one audit trail). Resolves `sent: false` when the channel is unknown. `acknowledge`
 * is told whether the clicker may decide before the decision is published.
 */
export async function decideApproval(
  deps: { bus: Bus; adapter: string; dialect: Dialect; log: Logger },
  pending: PendingApproval | undefined,
  click: ApprovalClick,
  acknowledge?: (verdict: { refusal?: string }) => Promise<unknown>,
): Promise<{ refusal?: string; sent: boolean }> {
  const refusal = pending && !pending.approvers.includes(click.user.id) ? notApproverText(pending.approvers, deps.dialect) : undefined;
  // Before the bus, which can take seconds when NATS is slow: some platforms drop a click not answered in time.
  await acknowledge?.(refusal ? { refusal } : {});
  const channel = pending?.channel ?? click.channel;
  if (!channel) return { ...(refusal && { refusal }), sent: false };
  const decision: ControlMessage = { type: "approval_decision", ts: new Date().toISOString(), approvalId: click.approvalId, decision: click.decision, decidedBy: click.user };
  const ref = { adapter: deps.adapter, channelId: channel };
  await deps.bus.publish(deps.bus.subjects.channel("ctl", ref), decision, `${deps.adapter}:${click.approvalId}:${click.decision}:${click.user.id}`, { retryForMs: 30_000 });
  deps.log.info({ approvalId: click.approvalId, decision: click.decision, by: click.user.username, approver: !refusal }, "approval decision sent");
  return { ...(refusal && { refusal }), sent: true };
}

/**
 * The inbound side every ingress shares: each platform message handled once (a redelivery, a
 * replayed gateway event, `app_mention` + `message` for one mention), messages of one chat in
 * the order they came, chats side by side. A message whose handling failed is forgotten, so the
 * platform's redelivery of it is handled again; the failure is logged with the platform's name.
 */
export class InboundIntake {
  private readonly queue = new ChannelQueue();
  private readonly seen = new RecentIds();
  /** Handlings not settled yet, by chat and id: a redelivery meanwhile waits for its outcome. */
  private readonly inFlight = new Map<string, Promise<boolean>>();

  constructor(
    private readonly platform: string,
    private readonly log: Logger,
  ) {}

  /** Queues `handle` behind the chat's earlier messages; false (and nothing queued) when `id` was taken already. */
  take(chat: string, id: string, handle: () => Promise<unknown>): boolean {
    if (this.seen.has(`${chat}:${id}`)) return false;
    // Failures are logged by handle(); nothing waits for this one.
    this.handle(chat, id, handle).catch(() => {});
    return true;
  }

  /**
   * Like `take`, for a caller that waits: resolves true once `handle` is done, false when `id` was
   * taken already; rejects with `handle`'s error (logged here, the id forgotten). An `id` taken but
   * not handled yet resolves false only once that handling is done, and rejects if it fails: a
   * platform's redelivery (a webhook re-sent because its answer was late) must not be confirmed
   * before the message it carries is stored.
   */
  handle(chat: string, id: string, handle: () => Promise<unknown>): Promise<boolean> {
    const key = `${chat}:${id}`;
    if (!this.seen.add(key)) return this.inFlight.get(key)?.then(() => false) ?? Promise.resolve(false);
    const handling = this.queue.push(chat, handle).then(
      () => true,
      (err: unknown) => {
        this.seen.delete(key);
        this.log.error({ err, chat, id }, `could not hand a ${this.platform} message to mom: ${(err as Error)?.message ?? err}`);
        throw err;
      },
    );
    this.inFlight.set(key, handling);
    const settled = () => void this.inFlight.delete(key);
    handling.then(settled, settled);
    return handling;
  }

  /**
   * Catches a chat up on what it missed (a backfill): `missed` runs in the chat's turn, ahead of
   * what comes later, and each message it finds is handled like a live one — once, in order, its
   * id forgotten when handling fails (which ends the catch-up). `stopped` ends it early (shutdown).
   * Resolves with how many messages were handled.
   */
  catchUp<M extends { id: string }>(chat: string, missed: () => Promise<M[]>, handle: (m: M) => Promise<unknown>, stopped: () => boolean = () => false): Promise<number> {
    return this.queue.push(chat, async () => {
      let handled = 0;
      for (const m of await missed()) {
        if (stopped()) break;
        const key = `${chat}:${m.id}`;
        if (!this.seen.add(key)) continue;
        try {
          await handle(m);
        } catch (err) {
          this.seen.delete(key);
          throw err;
        }
        handled++;
      }
      return handled;
    });
  }

  /** Resolves when everything queued so far has settled. */
  idle(): Promise<void> {
    return this.queue.idle();
  }
}
