import {
  approvalPromptParts,
  clip,
  codeBlocks,
  type Dialect,
  type Ev,
  escapeMrkdwn,
  fenceSafe,
  type Placement,
  type SharedFile,
  type ThreadMessage,
  type ThreadSurface,
} from "@mom/ingress-sdk";
import type { WebClient } from "@slack/web-api";
import { isSlackTs } from "./slack-inbound.js";

/** A Block Kit block, as JSON. */
type SlackBlock = Record<string, unknown>;

/** An approval prompt: its ts, and its text blocks (without the buttons), kept when the outcome is added. */
export interface SlackPrompt {
  ts: string;
  sections: SlackBlock[];
}

/** Characters in the text of one section block. */
export const SLACK_SECTION_LIMIT = 3000;

const section = (text: string): SlackBlock => ({ type: "section", text: { type: "mrkdwn", text: clip(text, SLACK_SECTION_LIMIT) } });

export const APPROVAL_ALLOW = "mom_approval_allow";
export const APPROVAL_DENY = "mom_approval_deny";

/** Slack's mrkdwn (`toMrkdwn` also writes `@username` as `<@U…>`), with emoji shortcodes for the marks. */
export function slackDialect(limit: number, toMrkdwn: (markdown: string) => string): Dialect {
  return {
    limit,
    escape: escapeMrkdwn,
    bold: (t) => `*${t}*`,
    italic: (t) => `_${t}_`,
    code: (t) => `\`${escapeMrkdwn(t)}\``,
    codeBlock: (t) => "```\n" + (fenceSafe(escapeMrkdwn(t.trimEnd())) || " ") + "\n```",
    mention: (id) => `<@${id}>`,
    fromMarkdown: toMrkdwn,
    marks: {
      working: ":hourglass_flowing_sand:",
      ok: ":white_check_mark:",
      failed: ":x:",
      denied: ":no_entry_sign:",
      pending: ":hourglass:",
      stopped: ":black_square_for_stop:",
      warning: ":warning:",
      retry: ":repeat:",
      approval: ":closed_lock_with_key:",
      expired: ":hourglass:",
      usage: ":bar_chart:",
      file: ":paperclip:",
    },
  };
}

const QUEUED_REACTION = "hourglass_flowing_sand";

/** The Web API's error code of a failed call (`message_not_found`). */
const slackError = (err: unknown) => (err as { data?: { error?: unknown } }).data?.error;

/** For a call that fails with `done` when what it asks for is so already: that failure is success. */
const unless = (done: string) => (err: unknown) => {
  if (slackError(err) !== done) throw err;
};

/**
 * Slack's primitives for the SDK's ThreadedLayout, which draws a run (docs/slack.md): one main
 * message (`⏳ working…`, `⏳ → label`) that becomes the answer; finished tool calls, retries and
 * the usage line in the thread under it (any message roots a thread: its ts); files uploaded into
 * the run's thread as they come; a reaction on a queued trigger; prompts as Block Kit sections
 * with buttons. The Web API client waits out a 429's Retry-After and retries, so nothing is lost.
 */
export class SlackSurface implements ThreadSurface<string, SlackPrompt> {
  readonly name = "Slack";
  readonly liveDetails = true;
  readonly replyMentions = true;

  /** `api` waits out a 429's Retry-After and retries; tests fake its calls. */
  constructor(
    private readonly api: WebClient,
    readonly dialect: Dialect,
  ) {}

  /** chat.postMessage (with Block Kit blocks when given; `text` is then the notification fallback). */
  async post(channel: string, m: ThreadMessage, at: Placement, blocks?: SlackBlock[]): Promise<string> {
    const thread = at.thread && { thread_ts: at.thread };
    const res = await this.api.chat.postMessage({ channel, text: m.text, unfurl_links: false, unfurl_media: false, ...thread, ...(blocks && { blocks: blocks as never }) });
    if (!res.ts) throw new Error("chat.postMessage returned no ts");
    return res.ts;
  }

  async edit(channel: string, ts: string, m: ThreadMessage): Promise<void> {
    await this.api.chat.update({ channel, ts, text: m.text });
  }

  /** A message someone deleted already is gone as wanted (a silent run then deletes its details too). */
  async delete(channel: string, ts: string): Promise<void> {
    await this.api.chat.delete({ channel, ts }).catch(unless("message_not_found"));
  }

  /** files.uploadV2 into the channel (in the thread when there is one). */
  async upload(channel: string, f: SharedFile, at: Placement): Promise<void> {
    const file = { file: Buffer.from(f.bytes), filename: f.filename, title: f.title, channel_id: channel };
    await this.api.files.uploadV2(at.thread ? { ...file, thread_ts: at.thread } : file);
  }

  /** chat.update of a message someone deleted: the answer is posted anew. */
  isGone(err: unknown): boolean {
    return slackError(err) === "message_not_found";
  }

  async markQueued(channel: string, ts: string, queued: boolean): Promise<void> {
    if (!isSlackTs(ts)) return;
    const reaction = { channel, timestamp: ts, name: QUEUED_REACTION };
    // Already so (the queued event drawn again after a restart) is done: the layout then knows to take it away.
    await (queued ? this.api.reactions.add(reaction) : this.api.reactions.remove(reaction)).catch(unless(queued ? "already_reacted" : "no_reaction"));
  }

  /** The arguments can be longer than one section: they are spread over several, never clipped. */
  async prompt(channel: string, text: string, ev: Ev<"approval_requested">, at: Placement): Promise<SlackPrompt> {
    const p = approvalPromptParts(ev, this.dialect, this.deadline.bind(this));
    const sections = [p.head, ...codeBlocks(p.args, this.dialect, SLACK_SECTION_LIMIT), p.foot].map(section);
    const buttons = [
      { type: "button", text: { type: "plain_text", text: "Allow once" }, style: "primary", action_id: APPROVAL_ALLOW, value: ev.approvalId },
      { type: "button", text: { type: "plain_text", text: "Deny" }, style: "danger", action_id: APPROVAL_DENY, value: ev.approvalId },
    ];
    const blocks = [...sections, { type: "actions", block_id: `mom_approval:${ev.approvalId}`.slice(0, 255), elements: buttons }];
    return { ts: await this.post(channel, { text }, at, blocks), sections };
  }

  async closePrompt(channel: string, prompt: SlackPrompt, text: string): Promise<void> {
    const outcome = text.slice(text.lastIndexOf("\n") + 1);
    await this.api.chat.update({ channel, ts: prompt.ts, text, blocks: [...prompt.sections, section(outcome)] as never });
  }

  deadline(expiresAt: string): string {
    return `by <!date^${Math.floor(Date.parse(expiresAt) / 1000)}^{time}|${expiresAt.slice(11, 16)} UTC>`;
  }
}
