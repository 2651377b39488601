import type { ChannelMessage } from "@mom/ingress-sdk";
import { createHmac, timingSafeEqual } from "node:crypto";

/** True when `header` is `sha256=<hex>` of the raw body under the app secret (compared in constant time). */
export function validSignature(raw: Buffer, header: string | undefined, appSecret: string): boolean {
  const m = /^sha256=([0-9a-f]{64})$/i.exec(header ?? "");
  if (!m) return false;
  const expected = createHmac("sha256", appSecret).update(raw).digest();
  return timingSafeEqual(expected, Buffer.from(m[1]!, "hex"));
}

/** The parts of a Cloud API message mom reads. */
export interface WaMessage {
  from: string;
  id: string;
  timestamp: string;
  type: string;
  text?: { body: string };
  image?: WaMedia;
  document?: WaMedia;
  audio?: WaMedia;
  video?: WaMedia;
  voice?: WaMedia;
  sticker?: WaMedia;
  interactive?: { type: string; button_reply?: { id: string; title: string } };
  context?: { id: string };
}

export interface WaMedia {
  id: string;
  mime_type?: string;
  filename?: string;
  caption?: string;
}

export interface WaContact {
  wa_id: string;
  profile?: { name?: string };
}

/** One message of a webhook post, with who sent it and to which business number. */
export interface WebhookMessage {
  phoneNumberId: string;
  contact: WaContact;
  message: WaMessage;
}

/** The messages of a `whatsapp_business_account` post (status updates and other fields are skipped). */
export function webhookMessages(body: unknown): WebhookMessage[] {
  const out: WebhookMessage[] = [];
  const root = body as { object?: string; entry?: Array<{ changes?: Array<{ field?: string; value?: Record<string, unknown> }> }> };
  if (root?.object !== "whatsapp_business_account") return out;
  for (const entry of root.entry ?? []) {
    for (const change of entry.changes ?? []) {
      if (change.field !== "messages" || !change.value) continue;
      const v = change.value as { metadata?: { phone_number_id?: string }; contacts?: WaContact[]; messages?: WaMessage[] };
      for (const message of v.messages ?? []) {
        if (!message?.id || !message.from) continue;
        const contact = v.contacts?.find((c) => c.wa_id === message.from) ?? { wa_id: message.from };
        out.push({ phoneNumberId: v.metadata?.phone_number_id ?? "", contact, message });
      }
    }
  }
  return out;
}

export interface IncomingMedia {
  mediaId: string;
  filename: string;
  mimeType?: string;
}

export type WhatsAppInbound = Omit<ChannelMessage, "attachments"> & { media?: IncomingMedia };

const EXT: Record<string, string> = { image: "jpg", audio: "ogg", video: "mp4", voice: "ogg", sticker: "webp" };

/**
 * A message -> a ChannelMessage on `mom.in.<adapter>.<wa_id>`. Every WhatsApp chat with the
 * business is a direct one, so every message addresses mom. Undefined for kinds mom cannot read
 * (reactions, locations, contacts, unsupported).
 */
export function toWhatsAppInbound(w: WebhookMessage): WhatsAppInbound | undefined {
  const m = w.message;
  const name = w.contact.profile?.name?.trim();
  const sender = { id: m.from, username: name ? name.replace(/\s+/g, "_") : m.from, ...(name && { displayName: name }), isBot: false };
  const kind = ["image", "document", "audio", "video", "voice", "sticker"].find((k) => m[k as keyof WaMessage]);
  const media = kind ? (m[kind as keyof WaMessage] as WaMedia) : undefined;
  const text = m.text?.body ?? media?.caption ?? "";
  if (!text.trim() && !media) return undefined;
  return {
    id: m.id,
    channelId: m.from,
    timestamp: new Date(Number(m.timestamp) * 1000 || Date.now()).toISOString(),
    sender,
    text,
    isMention: true,
    isDirect: true,
    ...(media && { media: { mediaId: media.id, filename: media.filename || `${kind}-${media.id}.${EXT[kind!] ?? "bin"}`, ...(media.mime_type && { mimeType: media.mime_type }) } }),
  };
}

/** A message the business sent that WhatsApp later reports as failed (status "failed"), with why. */
export interface FailedDelivery {
  messageId: string;
  recipient: string;
  errors: Array<{ code?: number; title?: string; message?: string }>;
}

/** The failed statuses of a webhook post: some send errors (e.g. 131047, the 24-hour window) arrive only this way. */
export function failedDeliveries(body: unknown): FailedDelivery[] {
  const root = body as { object?: string; entry?: Array<{ changes?: Array<{ field?: string; value?: { statuses?: Array<Record<string, unknown>> } }> }> };
  if (root?.object !== "whatsapp_business_account") return [];
  return (root.entry ?? [])
    .flatMap((e) => e.changes ?? [])
    .filter((c) => c.field === "messages")
    .flatMap((c) => c.value?.statuses ?? [])
    .filter((s) => s.status === "failed")
    .map((s) => ({ messageId: String(s.id ?? ""), recipient: String(s.recipient_id ?? ""), errors: (s.errors as FailedDelivery["errors"]) ?? [] }));
}
