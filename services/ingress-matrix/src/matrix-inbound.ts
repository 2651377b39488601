import { type IncomingFile, type PlatformMessage, type Sender } from "@mom/ingress-sdk";
import type { MediaDownloads } from "./matrix-media.js";

/** A room event as the Client-Server API delivers it in /sync. */
export interface MatrixEvent {
  event_id: string;
  type: string;
  sender: string;
  origin_server_ts: number;
  content: Record<string, unknown>;
  redacts?: string; // a redaction's target, in rooms before version 11
}

export interface BotIdentity {
  userId: string;
  displayName?: string;
}

interface Relation {
  rel_type?: string;
  event_id?: string;
  key?: string;
  "m.in_reply_to"?: { event_id?: string };
}

const FILE_TYPES = new Set(["m.file", "m.image", "m.audio", "m.video"]);
const TEXT_TYPES = new Set(["m.text", "m.notice", "m.emote"]);

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

export function relationOf(content: Record<string, unknown>): Relation {
  const r = content["m.relates_to"];
  return r && typeof r === "object" ? (r as Relation) : {};
}

/** `name` as a word: not inside a longer one (letters, digits, `_`); `$1` is what stands before it. */
const asWord = (name: string, flags: string) => new RegExp(`(^|[^\\p{L}\\p{N}_])${RegExp.escape(name)}(?=$|[^\\p{L}\\p{N}_])`, flags);

/** The localpart of `@ana:example.org`: "ana". */
export function localpart(userId: string): string {
  return /^@([^:]+):/.exec(userId)?.[1] ?? userId;
}

/** Full user ids in a text as the agent writes people: `@ana:example.org` -> `@ana`. */
export function mentionsAsUsernames(text: string): string {
  return text.replace(/(^|[\s(\[<"'])@([^\s:]+):[A-Za-z0-9.-]+(?::\d+)?(?=$|[\s)\]>"',.!?;])/g, "$1@$2");
}

/**
 * Mentions as clients write them — a pill (a matrix.to link in the HTML, its display name in the
 * body, "Ana: " in front when it starts the message) — rewritten as `@localpart`, the way every
 * ingress writes people, so "mom: stop" is the stop command it means.
 */
export function pillsAsUsernames(body: string, html: string | undefined): string {
  let out = body;
  for (const m of (html ?? "").matchAll(/<a href="https:\/\/matrix\.to\/#\/(@[^"]+?)">([^<]+)<\/a>/g)) {
    const [, id, name] = m;
    const at = `@${localpart(decodeURIComponent(id!))}`;
    if (out.startsWith(`${name}: `)) out = `${at} ${out.slice(name!.length + 2)}`;
    else out = out.replace(asWord(name!, "u"), (_, before: string) => `${before}${at}`);
  }
  return out;
}

/** The thread a message is in (`m.thread` relation): its root event id. */
export function threadOf(content: Record<string, unknown>): string | undefined {
  const r = relationOf(content);
  return r.rel_type === "m.thread" ? r.event_id : undefined;
}

/**
 * Whether a message addresses the bot. A client that sets `m.mentions` (intentional mentions,
 * Matrix 1.7) says exactly whom it mentions, and only that counts — a reply to the bot lists it
 * there too; without it, the bot's user id, a link to it (a pill) or its display name as a word in
 * the text does.
 */
export function mentionsBot(content: Record<string, unknown>, bot: BotIdentity): boolean {
  const mentions = content["m.mentions"];
  if (mentions && typeof mentions === "object") {
    const ids = (mentions as { user_ids?: unknown }).user_ids;
    return Array.isArray(ids) && ids.includes(bot.userId);
  }
  const body = str(content.body) ?? "";
  const html = str(content.formatted_body) ?? "";
  if (body.toLowerCase().includes(bot.userId.toLowerCase())) return true;
  if (html.includes(`matrix.to/#/${bot.userId}`) || html.includes(`matrix.to/#/${encodeURIComponent(bot.userId)}`)) return true;
  const name = bot.displayName?.trim();
  return !!name && asWord(name, "iu").test(body);
}

/**
 * A reply's body without the quoted fallback older clients put in front of it (lines starting
 * with "> " and one blank line; Matrix 1.13 dropped fallbacks, so newer clients send none).
 */
export function withoutReplyFallback(body: string, content: Record<string, unknown>): string {
  if (!relationOf(content)["m.in_reply_to"] || !body.startsWith("> ")) return body;
  return body.replace(/^(?:>.*(?:\n|$))+\n?/, "");
}

/**
 * The file of an `m.file`/`m.image`/`m.audio`/`m.video`, downloaded from `media` by its `mxc://`
 * URI; undefined when it has no plain `mxc://` URL (an encrypted file has `file` instead).
 */
export function fileOf(content: Record<string, unknown>, fallbackName: string, media: Pick<MediaDownloads, "download">): IncomingFile | undefined {
  const mxc = str(content.url);
  if (!mxc?.startsWith("mxc://")) return undefined;
  const info = (content.info && typeof content.info === "object" ? content.info : {}) as { size?: unknown; mimetype?: unknown };
  const filename = str(content.filename) || str(content.body) || fallbackName;
  const download = (max: number, signal?: AbortSignal) => media.download(mxc, max, signal);
  return { filename, ...(typeof info.size === "number" && { size: info.size }), ...(typeof info.mimetype === "string" && { mimeType: info.mimetype }), download };
}

/**
 * One `m.room.message` -> a message of `<adapter>/<room id>`; undefined for what mom does not
 * take (edits, locations, polls, empty messages). A file's text is its caption: the body when a
 * separate `filename` is given (Matrix 1.10 media captions). A message in a thread is answered in
 * that thread (`replyTo` = the thread's root). `m.notice` is how bots speak: their messages are
 * logged but never start a run, as other bots' messages on every platform.
 */
export function toMatrixInbound(roomId: string, ev: MatrixEvent, bot: BotIdentity, room: { isDirect: boolean; displayName?: string }, media: Pick<MediaDownloads, "download">): PlatformMessage | undefined {
  const c = ev.content;
  const msgtype = str(c.msgtype) ?? "";
  if (relationOf(c).rel_type === "m.replace") return undefined; // an edit of an earlier message
  let text = "";
  let file: IncomingFile | undefined;
  if (TEXT_TYPES.has(msgtype)) text = mentionsAsUsernames(pillsAsUsernames(withoutReplyFallback(str(c.body) ?? "", c), str(c.formatted_body)));
  else if (FILE_TYPES.has(msgtype)) file = fileOf(c, `${msgtype.slice(2)}-${ev.event_id.replace(/[^A-Za-z0-9]/g, "").slice(0, 12)}`, media);
  if (!text.trim() && !file) return undefined;
  if (file && str(c.filename) && str(c.body) !== str(c.filename)) text = mentionsAsUsernames(str(c.body) ?? "");
  const username = localpart(ev.sender);
  const sender: Sender = { id: ev.sender, username, ...(room.displayName && room.displayName !== username && { displayName: room.displayName }), isBot: msgtype === "m.notice" };
  const thread = threadOf(c);
  return {
    id: ev.event_id,
    channelId: roomId,
    timestamp: new Date(ev.origin_server_ts).toISOString(),
    sender,
    text,
    rawText: str(c.body) ?? text,
    files: file ? [file] : [],
    isMention: !sender.isBot && (room.isDirect || mentionsBot(c, bot)),
    isDirect: room.isDirect,
    ...(thread && { replyTo: thread }),
  };
}
