// A message mom posts in a channel for a person in another one (the send tool's `post` event):
// how it reads on the platform, and the record an ingress publishes of it once it is there.
import type { ChannelMessage, OutboundEvent } from "@mom/contracts";
import type { Dialect } from "./dialect.js";
import type { Ev } from "./run-view.js";

/** What the Presenter needs of an ingress to post: the check of who asked, and the record. */
export interface PostHandling {
  /** Why `ev` may not be posted in `channel` (who asked cannot see it, or the platform cannot tell); undefined when it may. */
  admit(channel: string, ev: Ev<"post">): Promise<string | undefined>;
  /** `ev` is on the platform as `messageIds`: publish its record (postRecord) so the channel's log has it. */
  record(channel: string, e: OutboundEvent, ev: Ev<"post">, messageIds: string[]): Promise<void>;
}

/** The line under a post: whom it was sent for, and from where. */
export function postAttribution(ev: Ev<"post">): string {
  return `sent by mom for @${ev.requestedBy.username} from ${ev.from}`;
}

/** A post as the platform shows it: the message, then who asked for it from where. */
export function postText(ev: Ev<"post">, d: Dialect): string {
  return `${d.fromMarkdown(ev.text.trim())}\n\n${d.italic(d.escape(postAttribution(ev)))}`;
}

/** The sender of a post's record: mom, as in the log's answers (`user: "mom"`). */
export const POST_SENDER = { id: "mom", username: "mom", isBot: true } as const;

/**
 * The record of a post an ingress publishes on `mom.in.<adapter>.<channel>` once the platform took
 * it: mom's message (a bot, not addressed to mom, so nobody answers it), its file by object key
 * (the runner saves it into the channel's attachments/), and in `metadata.post` where it came
 * from, who asked and the platform's message ids. The channel's runner logs it in log.jsonl like
 * any message, which is how the channel's history knows mom said it. The id is the post's, so a
 * record published twice is one message.
 */
export function postRecord(channelId: string, e: OutboundEvent, ev: Ev<"post">, messageIds: string[]): ChannelMessage {
  const f = ev.file;
  return {
    id: `post:${e.runId}`,
    channelId,
    timestamp: new Date().toISOString(),
    sender: { ...POST_SENDER },
    text: ev.text,
    attachments: f ? [{ filename: f.filename, localPath: "", size: f.size, objectKey: f.objectKey, ...(f.mimeType && { mimeType: f.mimeType }) }] : [],
    isMention: false,
    metadata: {
      post: {
        postId: e.runId,
        from: ev.from,
        fromRunId: ev.fromRunId,
        requestedBy: `${ev.requestedBy.adapter}/${ev.requestedBy.id}`,
        requestedByName: ev.requestedBy.username,
        messageIds,
      },
    },
  };
}
