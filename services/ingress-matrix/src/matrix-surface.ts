import { type ChatSurface, type Dialect, type Placement, RecentMap, type SharedFile, UNICODE_MARKS, fenceSafe } from "@mom/ingress-sdk";
import markdownEscape from "markdown-escape";
import type { MatrixClient } from "matrix-bot-sdk";
import { ALLOW, APPROVAL_FIELD, DENY, HOW_TO_DECIDE, type PostedPrompt, type Prompts } from "./matrix-approvals.js";
import { markdownToMatrixHtml } from "./matrix-html.js";
import { MATRIX_MESSAGE_LIMIT } from "./matrix-options.js";

/** A person as a pill: a link to their user id, which Matrix clients show as their name. */
const pill = (userId: string) => `[${userId}](https://matrix.to/#/${userId})`;

/**
 * The shared notes are written in Markdown (escaped with markdown-escape); each message goes out
 * as that Markdown in `body` and as HTML in `formatted_body`.
 */
export const matrixDialect: Dialect = {
  limit: MATRIX_MESSAGE_LIMIT,
  // The prompt gets a line saying how to decide.
  promptLimit: MATRIX_MESSAGE_LIMIT - HOW_TO_DECIDE.length - 2,
  escape: (t) => markdownEscape(t),
  bold: (t) => `**${t}**`,
  italic: (t) => `_${t}_`,
  code: (t) => (t.includes("`") ? `\`\` ${t} \`\`` : `\`${t}\``),
  codeBlock: (t) => "```\n" + (fenceSafe(t.trimEnd()) || " ") + "\n```",
  mention: pill,
  fromMarkdown: (md) => md,
  marks: UNICODE_MARKS,
};

/** The user ids a text pings (its pills), for `m.mentions`. */
export function pingedIn(text: string): string[] {
  return [...new Set([...text.matchAll(/\]\(https:\/\/matrix\.to\/#\/(@[^)\s/?]+)\)/g)].map((m) => m[1]!))];
}

type Content = Record<string, unknown>;

/**
 * Messages as `m.notice` (what bots send, so other bots never answer them — no loops), in
 * Markdown with HTML; progress edited in place with `m.replace`; answers as replies in the
 * trigger's thread; files uploaded to the media repository. 429s are waited out by the client.
 */
export class MatrixSurface implements ChatSurface {
  readonly dialect = matrixDialect;

  constructor(
    private readonly client: MatrixClient,
    private readonly prompts: Prompts,
    /** Who sent the messages the bot answers: a reply pings them, as Matrix replies do. */
    private readonly senders: RecentMap<{ userId: string }>,
  ) {}

  /** A message's content; `ping` are the people it notifies (`m.mentions`). */
  private text(text: string, ping: string[]): Content {
    const userIds = [...new Set(ping)];
    return { msgtype: "m.notice", body: text, format: "org.matrix.custom.html", formatted_body: markdownToMatrixHtml(text), "m.mentions": userIds.length ? { user_ids: userIds } : {} };
  }

  private where(at: Placement): Content {
    if (at.thread) {
      // In a thread, `m.in_reply_to` is the message answered, or (falling back, for clients without threads) the root.
      return { "m.relates_to": { rel_type: "m.thread", event_id: at.thread, is_falling_back: !at.replyTo, "m.in_reply_to": { event_id: at.replyTo ?? at.thread } } };
    }
    return at.replyTo ? { "m.relates_to": { "m.in_reply_to": { event_id: at.replyTo } } } : {};
  }

  private repliedTo(at: Placement): string[] {
    const sender = at.replyTo ? this.senders.get(at.replyTo) : undefined;
    return sender ? [sender.userId] : [];
  }

  post(channel: string, text: string, at: Placement): Promise<string> {
    return this.notice(channel, text, at, [...pingedIn(text), ...this.repliedTo(at)]);
  }

  /** A message that notifies exactly `ping` (a refusal names the approvers without calling them). */
  notice(channel: string, text: string, at: Placement, ping: string[]): Promise<string> {
    return this.client.sendMessage(channel, { ...this.text(text, ping), ...this.where(at) });
  }

  async edit(channel: string, messageId: string, text: string): Promise<void> {
    // The fallback for clients without edits is the text alone; no one is pinged again by an edit.
    await this.client.sendMessage(channel, {
      msgtype: "m.notice",
      body: `* ${text}`,
      "m.new_content": this.text(text, pingedIn(text)),
      "m.mentions": {},
      "m.relates_to": { rel_type: "m.replace", event_id: messageId },
    });
  }

  async delete(channel: string, messageId: string): Promise<void> {
    await this.client.redactEvent(channel, messageId);
  }

  async upload(channel: string, file: SharedFile, at: Placement): Promise<void> {
    const mimeType = file.mimeType ?? "application/octet-stream";
    const mxc = await this.client.uploadContent(Buffer.from(file.bytes), mimeType, file.filename);
    // A body other than the filename is the file's caption (Matrix 1.10).
    await this.client.sendMessage(channel, { msgtype: "m.file", body: file.title || file.filename, filename: file.filename, info: { mimetype: mimeType, size: file.bytes.length }, url: mxc, ...this.where(at) });
  }

  async typing(channel: string): Promise<void> {
    await this.client.setTyping(channel, true, 6000);
  }

  async prompt(channel: string, text: string, approvalId: string, at: Placement, approvers: string[]): Promise<string> {
    const eventId = await this.client.sendMessage(channel, { ...this.text(`${text}\n\n${HOW_TO_DECIDE}`, [...pingedIn(text), ...approvers]), [APPROVAL_FIELD]: approvalId, ...this.where(at) });
    const prompt: PostedPrompt = { approvalId, ...(at.thread && { thread: at.thread }), reactions: [] };
    // Known before the reactions are up: a person may react first.
    this.prompts.add(eventId, prompt);
    for (const key of [ALLOW, DENY]) prompt.reactions.push(await this.client.sendEvent(channel, "m.reaction", { "m.relates_to": { rel_type: "m.annotation", event_id: eventId, key } }));
    return eventId;
  }

  async closePrompt(channel: string, messageId: string, text: string): Promise<void> {
    const prompt = this.prompts.get(messageId);
    this.prompts.delete(messageId);
    await this.edit(channel, messageId, text);
    for (const reaction of prompt?.reactions ?? []) await this.client.redactEvent(channel, reaction);
  }
}
