import { ApprovalCodes, type PlatformMessage } from "@mom/ingress-sdk";
import type { MessageEvent } from "irc-framework";

/** What turns IRC lines into messages: our nick and how names compare on this network. */
export interface IrcView {
  nick: string;
  identity: "nick" | "account";
  lower(text: string): string;
}

/** `!approve <code>` / `!deny <code>`: an approval answered in the chat (IRC has no buttons). */
export const parseDecision = (text: string) => (/^\s*!/.test(text) ? ApprovalCodes.read(text.replace(/^\s*!/, "")) : undefined);

/**
 * The sender's id: their nick in lower case, or with `identity: "account"` their services account;
 * someone not logged in is `~nick` then, which no account and no nick can be.
 */
export function senderId(e: MessageEvent, v: IrcView): string {
  if (v.identity === "nick") return v.lower(e.nick);
  return e.account ? v.lower(e.account) : `~${v.lower(e.nick)}`;
}

/** The channel of a line: `#channel`, or for a private message the sender's nick. */
export const chatOf = (e: MessageEvent, v: IrcView): string => v.lower(v.lower(e.target) === v.lower(v.nick) ? e.nick : e.target);

const NICK_CHARS = /[^A-Za-z0-9[\]\\`_^{|}-]+/;

/**
 * A PRIVMSG -> a message of mom's: a channel's messages are `<adapter>/#channel`, a private
 * message is `<adapter>/<their nick>` (isDirect). mom is addressed by a private message, a line
 * starting with `nick:` or `nick,` (rewritten to `@nick`), or its nick anywhere as a word.
 */
export function toPlatformMessage(e: MessageEvent, id: string, v: IrcView): PlatformMessage {
  const isDirect = chatOf(e, v) !== v.lower(e.target);
  const nick = v.lower(v.nick);
  const address = /^\s*(\S+?)[:,]\s*/.exec(e.message);
  const addressed = !!address && v.lower(address[1]!) === nick;
  const named = e.message.split(NICK_CHARS).some((w) => v.lower(w) === nick);
  const text = addressed ? `@${v.nick} ${e.message.slice(address![0].length)}` : e.message;
  return {
    id,
    channelId: chatOf(e, v),
    timestamp: new Date(e.time ?? Date.now()).toISOString(),
    sender: { id: senderId(e, v), username: e.nick, isBot: "bot" in e.tags },
    text,
    ...(text !== e.message && { rawText: e.message }),
    isMention: isDirect || addressed || named,
    ...(isDirect && { isDirect: true }),
  };
}
