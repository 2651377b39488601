import type { Attachment, ChannelMessage } from "@mom/ingress-sdk";
import { mrkdwnToText, type SlackNames } from "@mom/ingress-sdk";
import type { SlackUser } from "./slack-directory.js";

/** A file as Slack describes it in a message (the fields mom uses). */
export interface SlackFile {
  id?: string;
  name?: string;
  title?: string;
  mimetype?: string;
  size?: number;
  url_private?: string;
  url_private_download?: string;
  mode?: string;
}

/** A `message` / `app_mention` event, or a message from conversations.history. */
export interface SlackMessageEvent {
  type?: string;
  subtype?: string;
  channel: string;
  channel_type?: string;
  user?: string;
  bot_id?: string;
  username?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  files?: SlackFile[];
  hidden?: boolean;
}

// Message subtypes that are something a person (or another bot) said. Edits, deletions, joins,
// topic changes and the like are not messages to mom.
const SAID = new Set([undefined, "file_share", "thread_broadcast", "me_message", "bot_message"]);

export function isConversationMessage(ev: SlackMessageEvent): boolean {
  return SAID.has(ev.subtype) && !ev.hidden && typeof ev.ts === "string" && typeof ev.channel === "string";
}

/** Slack `ts` ("1732184400.000100") -> ISO 8601. */
export function tsToIso(ts: string): string {
  const [sec = "0", frac = "0"] = ts.split(".");
  return new Date(Number(sec) * 1000 + Math.floor(Number(`0.${frac}`) * 1000)).toISOString();
}

/** True when `id` looks like a Slack message ts. */
export function isSlackTs(id: string): boolean {
  return /^\d+\.\d+$/.test(id);
}

/** Orders Slack ts values exactly (floats lose the microseconds). */
export function compareTs(a: string, b: string): number {
  const [as = "0", af = ""] = a.split(".");
  const [bs = "0", bf = ""] = b.split(".");
  if (as.length !== bs.length) return as.length - bs.length;
  if (as !== bs) return as < bs ? -1 : 1;
  const fa = af.padEnd(6, "0");
  const fb = bf.padEnd(6, "0");
  return fa === fb ? 0 : fa < fb ? -1 : 1;
}

export interface InboundContext {
  botUserId: string;
  sender: SlackUser;
  names: SlackNames;
  isDirect: boolean;
  attachments: Attachment[];
}

/**
 * A Slack message as a ChannelMessage: id = ts (unique in the channel), `<@U…>` -> `@name` in
 * `text` with the original in `rawText`, thread replies answer in their thread (`replyTo`).
 * It addresses mom when it is a DM or mentions the bot; other bots never trigger a run.
 */
export function toChannelMessage(ev: SlackMessageEvent, ctx: InboundContext): ChannelMessage {
  const raw = ev.text ?? "";
  const mentionsBot = raw.includes(`<@${ctx.botUserId}>`) || raw.includes(`<@${ctx.botUserId}|`);
  return {
    id: ev.ts,
    channelId: ev.channel,
    timestamp: tsToIso(ev.ts),
    sender: {
      id: ctx.sender.id,
      username: ctx.sender.username,
      ...(ctx.sender.displayName && { displayName: ctx.sender.displayName }),
      isBot: ctx.sender.isBot,
    },
    text: mrkdwnToText(raw, ctx.names),
    rawText: raw,
    attachments: ctx.attachments,
    isMention: !ctx.sender.isBot && (ctx.isDirect || mentionsBot),
    isDirect: ctx.isDirect,
    ...(ev.thread_ts && ev.thread_ts !== ev.ts && { replyTo: ev.thread_ts }),
  };
}

