import { ApprovalReactions, type ChatSurface, markdownDialect, markdownToHtml, type Placement, RecentIds, type SharedFile } from "@mom/ingress-sdk";
import type { MatrixClient } from "matrix-bot-sdk";
import { MATRIX_MESSAGE_LIMIT } from "./matrix-options.js";

// Matrix has no buttons: a prompt is decided by reaction (ApprovalReactions). It carries its
// approval id in its content, so a reaction still reaches the runner after the ingress restarted.
export const APPROVAL_FIELD = "mom.approval";

/**
 * Each message goes out as Markdown in `body` and as HTML in `formatted_body` (Matrix clients
 * render `org.matrix.custom.html`, which covers everything Markdown produces).
 */
export const matrixDialect = markdownDialect({
  limit: MATRIX_MESSAGE_LIMIT,
  // The prompt gets a line saying how to decide.
  promptLimit: MATRIX_MESSAGE_LIMIT - ApprovalReactions.howTo.length - 2,
  // A person as a pill: a link to their user id, which Matrix clients show as their name.
  mention: (userId) => `[${userId}](https://matrix.to/#/${userId})`,
});

/** The user ids a text pings (its pills), for `m.mentions`. */
export function pingedIn(text: string): string[] {
  return [...new Set([...text.matchAll(/\]\(https:\/\/matrix\.to\/#\/(@[^)\s/?]+)\)/g)].map((m) => m[1]!))];
}

type Content = Record<string, unknown>;

/** An edit refused because the message was redacted: the homeserver would take it, and clients would show none of it. */
class Redacted extends Error {}

/**
 * Messages as `m.notice` (what bots send, so other bots never answer them — no loops), in
 * Markdown with HTML; progress edited in place with `m.replace`; answers as replies in the
 * trigger's thread; files uploaded to the media repository. 429s are waited out by the client.
 */
export class MatrixSurface implements ChatSurface {
  readonly dialect = matrixDialect;
  readonly approvals = new ApprovalReactions();
  /** Events the sync saw redacted (by a moderator, or by the bot itself), their edits included. */
  readonly redacted = new RecentIds();

  constructor(private readonly client: MatrixClient) {}

  /** A message's content; `ping` are the people it notifies (`m.mentions`). */
  private text(text: string, ping: string[]): Content {
    const userIds = [...new Set(ping)];
    return { msgtype: "m.notice", body: text, format: "org.matrix.custom.html", formatted_body: markdownToHtml(text).trim(), "m.mentions": userIds.length ? { user_ids: userIds } : {} };
  }

  private where(at: Placement): Content {
    if (at.thread) {
      // In a thread, `m.in_reply_to` is the message answered, or (falling back, for clients without threads) the root.
      return { "m.relates_to": { rel_type: "m.thread", event_id: at.thread, is_falling_back: !at.replyTo, "m.in_reply_to": { event_id: at.replyTo ?? at.thread } } };
    }
    return at.replyTo ? { "m.relates_to": { "m.in_reply_to": { event_id: at.replyTo } } } : {};
  }

  /** A reply pings whom it answers, as Matrix replies do. */
  post(channel: string, text: string, at: Placement): Promise<string> {
    return this.notice(channel, text, at, [...pingedIn(text), ...(at.replyToUser?.startsWith("@") ? [at.replyToUser] : [])]);
  }

  /** A message that notifies exactly `ping` (a refusal names the approvers without calling them). */
  notice(channel: string, text: string, at: Placement, ping: string[]): Promise<string> {
    return this.client.sendMessage(channel, { ...this.text(text, ping), ...this.where(at) });
  }

  async edit(channel: string, messageId: string, text: string): Promise<void> {
    // Matrix takes an edit of a redacted message and shows none of it: refused, so the layout posts anew.
    if (this.redacted.has(messageId)) throw new Redacted(`${messageId} was redacted`);
    // The fallback for clients without edits is the text alone; no one is pinged again by an edit.
    await this.client.sendMessage(channel, {
      msgtype: "m.notice",
      body: `* ${text}`,
      "m.new_content": this.text(text, pingedIn(text)),
      "m.mentions": {},
      "m.relates_to": { rel_type: "m.replace", event_id: messageId },
    });
  }

  isGone(err: unknown): boolean {
    return err instanceof Redacted;
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
    const eventId = await this.client.sendMessage(channel, { ...this.text(`${text}\n\n${ApprovalReactions.howTo}`, [...pingedIn(text), ...approvers]), [APPROVAL_FIELD]: approvalId, ...this.where(at) });
    const reactions = this.approvals.posted(eventId, approvalId, at.thread);
    for (const key of [ApprovalReactions.allow, ApprovalReactions.deny]) reactions.push(await this.client.sendEvent(channel, "m.reaction", { "m.relates_to": { rel_type: "m.annotation", event_id: eventId, key } }));
    return eventId;
  }

  async closePrompt(channel: string, messageId: string, text: string): Promise<void> {
    const reactions = this.approvals.closed(messageId);
    // A prompt a moderator removed stays removed (an edit would show nothing); the run's answer still shows whether the tool ran.
    if (!this.redacted.has(messageId)) await this.edit(channel, messageId, text);
    for (const reaction of reactions) await this.client.redactEvent(channel, reaction);
  }
}
