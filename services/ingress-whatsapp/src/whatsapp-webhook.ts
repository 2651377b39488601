import type { Downloaded, PlatformMessage, Sender } from "@mom/ingress-sdk";
import { createHmac, timingSafeEqual } from "node:crypto";

/** True when `header` is `sha256=<hex>` of the raw body under the app secret (compared in constant time). */
export function validSignature(raw: Buffer, header: string | undefined, appSecret: string): boolean {
  const m = /^sha256=([0-9a-f]{64})$/i.exec(header ?? "");
  if (!m) return false;
  const expected = createHmac("sha256", appSecret).update(raw).digest();
  return timingSafeEqual(expected, Buffer.from(m[1]!, "hex"));
}

/** Kinds of message that carry a file. */
const MEDIA_KINDS = ["image", "document", "audio", "video", "voice", "sticker"] as const;
type MediaKind = (typeof MEDIA_KINDS)[number];
/** File name extensions for media sent without a name (only documents have one). */
const EXT: Record<string, string> = { image: "jpg", audio: "ogg", video: "mp4", voice: "ogg", sticker: "webp" };

/** The parts of a Cloud API message mom reads. */
export interface WaMessage extends Partial<Record<MediaKind, WaMedia>> {
  from: string;
  id: string;
  timestamp: string;
  type: string;
  text?: { body: string };
  interactive?: { type: string; button_reply?: { id: string; title: string } };
  context?: { id: string };
}

export interface WaMedia {
  id: string;
  mime_type?: string;
  filename?: string;
  caption?: string;
}

/** One message of a webhook post, with who sent it and to which business number. */
export interface WebhookMessage {
  phoneNumberId: string;
  sender: Sender;
  message: WaMessage;
}

/** A message the business sent that WhatsApp later reports as failed (status "failed"), with why. */
export interface FailedDelivery {
  messageId: string;
  recipient: string;
  errors: Array<{ code?: number; title?: string; message?: string }>;
}

interface MessagesChange {
  metadata?: { phone_number_id?: string };
  contacts?: Array<{ wa_id: string; profile?: { name?: string } }>;
  messages?: WaMessage[];
  statuses?: Array<Record<string, unknown>>;
}

/** The "messages" changes of a `whatsapp_business_account` post; other objects and fields are skipped. */
function messagesChanges(body: unknown): MessagesChange[] {
  const root = body as { object?: string; entry?: Array<{ changes?: Array<{ field?: string; value?: MessagesChange }> }> };
  if (root?.object !== "whatsapp_business_account") return [];
  return (root.entry ?? []).flatMap((e) => e.changes ?? []).flatMap((c) => (c.field === "messages" && c.value ? [c.value] : []));
}

/** The messages of a webhook post (status updates are skipped). */
export function webhookMessages(body: unknown): WebhookMessage[] {
  return messagesChanges(body).flatMap((v) =>
    (v.messages ?? [])
      .filter((message) => message?.id && message.from)
      .map((message) => ({ phoneNumberId: v.metadata?.phone_number_id ?? "", sender: senderOf(message.from, v.contacts?.find((c) => c.wa_id === message.from)), message })),
  );
}

/** The failed statuses of a webhook post: some send errors (e.g. 131047, the 24-hour window) arrive only this way. */
export function failedDeliveries(body: unknown): FailedDelivery[] {
  return messagesChanges(body)
    .flatMap((v) => v.statuses ?? [])
    .filter((s) => s.status === "failed")
    .map((s) => ({ messageId: String(s.id ?? ""), recipient: String(s.recipient_id ?? ""), errors: (s.errors as FailedDelivery["errors"]) ?? [] }));
}

/** Who wrote: their WhatsApp profile name as username (spaces as `_`), else their number. */
function senderOf(waId: string, contact: { profile?: { name?: string } } | undefined): Sender {
  const name = contact?.profile?.name?.trim();
  return { id: waId, username: name ? name.replace(/\s+/g, "_") : waId, ...(name && { displayName: name }), isBot: false };
}

/**
 * A message -> a message of channel `<wa_id>`, its file fetched with `download`. Every WhatsApp
 * chat with the business is a direct one, so every message addresses mom. Undefined for kinds mom
 * cannot read (reactions, locations, contacts, unsupported).
 */
export function toWhatsAppInbound(w: WebhookMessage, download: (mediaId: string, maxBytes: number, signal?: AbortSignal) => Promise<Downloaded>): PlatformMessage | undefined {
  const m = w.message;
  const kind = MEDIA_KINDS.find((k) => m[k]);
  const media = kind && m[kind];
  const text = m.text?.body ?? media?.caption ?? "";
  if (!text.trim() && !media) return undefined;
  const filename = media && (media.filename || `${kind}-${media.id}.${EXT[kind!] ?? "bin"}`);
  return {
    id: m.id,
    channelId: m.from,
    timestamp: new Date(Number(m.timestamp) * 1000 || Date.now()).toISOString(),
    sender: w.sender,
    text,
    isMention: true,
    isDirect: true,
    files: media ? [{ filename: filename!, ...(media.mime_type && { mimeType: media.mime_type }), download: (max: number, signal?: AbortSignal) => download(media.id, max, signal) }] : [],
  };
}
