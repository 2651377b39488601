import type { IncomingFile, PlatformMessage, Sender } from "@mom/ingress-sdk";
import type { Message, MessageEntity, User, UserFromGetMe } from "grammy/types";

/** A file in a Telegram message, before it is downloaded. */
export type TelegramFile = Omit<IncomingFile, "download"> & { fileId: string };

export type BotIdentity = Pick<UserFromGetMe, "id" | "username">;

export function senderOf(u: User): Sender {
  const displayName = [u.first_name, u.last_name].filter(Boolean).join(" ");
  return { id: String(u.id), username: u.username ?? (displayName.replace(/\s+/g, "_") || String(u.id)), ...(displayName && displayName !== u.username && { displayName }), isBot: u.is_bot };
}

function entityText(text: string, e: MessageEntity): string {
  // Offsets are in UTF-16 code units, as JavaScript strings are.
  return text.slice(e.offset, e.offset + e.length);
}

/**
 * Whether mom is addressed: in a private chat always; in a group by an @mention, a text mention,
 * a command meant for it (`/ask@mom_bot`), or a reply to one of its messages. A forum topic's
 * messages "reply" to the topic's first message, which is not a reply to mom.
 */
export function addressesBot(msg: Message, bot: BotIdentity): boolean {
  if (msg.chat.type === "private") return true;
  const text = msg.text ?? msg.caption ?? "";
  const at = `@${bot.username}`.toLowerCase();
  for (const e of msg.entities ?? msg.caption_entities ?? []) {
    if (e.type === "mention" && entityText(text, e).toLowerCase() === at) return true;
    if (e.type === "text_mention" && e.user.id === bot.id) return true;
    if (e.type === "bot_command" && entityText(text, e).toLowerCase().endsWith(at)) return true;
  }
  const replied = msg.reply_to_message;
  return !!replied && !replied.forum_topic_created && replied.from?.id === bot.id;
}

/** The files of a message: documents, the largest size of a photo, audio, video, voice. */
export function filesOf(msg: Message): TelegramFile[] {
  const out: TelegramFile[] = [];
  const add = (f: { file_id: string; file_size?: number; file_name?: string; mime_type?: string } | undefined, fallback: string) => {
    if (f) out.push({ fileId: f.file_id, filename: f.file_name || fallback, ...(f.file_size !== undefined && { size: f.file_size }), ...(f.mime_type && { mimeType: f.mime_type }) });
  };
  add(msg.document, `document-${msg.message_id}`);
  add(msg.photo?.at(-1), `photo-${msg.message_id}.jpg`);
  add(msg.audio, `audio-${msg.message_id}.mp3`);
  add(msg.video, `video-${msg.message_id}.mp4`);
  add(msg.voice, `voice-${msg.message_id}.ogg`);
  return out;
}

/**
 * One Telegram message -> a message for `mom.in.<adapter>.<chat id>`, its files fetched by
 * `download`; undefined for what is not a message of a person or bot (service messages: joins,
 * pins, topic creation). A message in a forum topic answers in that topic (`replyTo` = the topic's
 * thread id).
 */
export function toTelegramInbound(msg: Message, bot: BotIdentity, download: (f: TelegramFile) => IncomingFile["download"]): PlatformMessage | undefined {
  if (!msg.from) return undefined;
  const text = msg.text ?? msg.caption ?? "";
  const files = filesOf(msg).map((f) => ({ ...f, download: download(f) }));
  if (!text.trim() && files.length === 0) return undefined;
  const isDirect = msg.chat.type === "private";
  const sender = senderOf(msg.from);
  return {
    id: String(msg.message_id),
    channelId: String(msg.chat.id),
    timestamp: new Date(msg.date * 1000).toISOString(),
    sender,
    text,
    rawText: text,
    files,
    // Other bots are logged but never trigger a run (no bot-to-bot loops).
    isMention: !sender.isBot && addressesBot(msg, bot),
    isDirect,
    ...(msg.is_topic_message && msg.message_thread_id !== undefined && { replyTo: String(msg.message_thread_id) }),
  };
}
