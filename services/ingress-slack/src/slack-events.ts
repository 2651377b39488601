import { catchUpFromHistory, mrkdwnToText, type PlatformContext, type PlatformMessage } from "@mom/ingress-sdk";
import type { ConversationsHistoryResponse, WebClient } from "@slack/web-api";
import type { SlackDirectory } from "./slack-directory.js";
import { slackFile } from "./slack-files.js";
import { compareTs, isConversationMessage, type SlackMessageEvent, slackIds, tsToIso } from "./slack-inbound.js";
import type { SlackSettings } from "./slack-options.js";

/**
 * What people say in Slack, to the shell: Socket Mode events as they come, and on start what was
 * said while mom was away (backfill), each converted in its turn (user lookups take a Web API call).
 */
export class SlackEvents {
  constructor(
    private readonly ctx: PlatformContext<SlackSettings>,
    private readonly client: WebClient,
    private readonly directory: SlackDirectory,
    /** Who mom is in the workspace (auth.test). */
    private readonly self: { userId: string; botId: string },
  ) {}

  /** A `message` or `app_mention` event. Not awaited by Bolt beyond queueing: a slow download must not hold the socket. */
  event(ev: SlackMessageEvent): void {
    // Slack sends app_mention again when a message mentioning mom is edited (`edited`): an edit is no message.
    if (!isConversationMessage(ev) || this.isOwn(ev) || ev.edited) return;
    // app_mention + message for one mention, and Slack's retries: the shell takes each once.
    void this.ctx.inbound.receiveInTurn(ev.channel, ev.ts, () => this.convert(ev)).catch(() => {});
  }

  /** Backfill (the SDK's catchUpFromHistory): every channel mom has heard from, from where it left off, through conversations.history. */
  backfill(): Promise<void> {
    const { backfillAnswerWindowMs } = this.ctx.settings;
    return catchUpFromHistory(this.ctx, {
      ...slackIds,
      after: async (channel, after) => Promise.all((await this.missed(channel, after)).map((ev) => this.convert(ev))),
      ...(backfillAnswerWindowMs !== undefined && { answerWindowMs: backfillAnswerWindowMs }),
    });
  }

  /**
   * The channel's top-level messages newer than `after`, oldest first, at most 20 pages. They keep
   * their ts as id, so the bus's duplicate window drops any it already has. Thread replies posted
   * meanwhile are not fetched.
   */
  private async missed(channel: string, after: string): Promise<SlackMessageEvent[]> {
    const missed: SlackMessageEvent[] = [];
    let pages = 0;
    for await (const page of this.client.paginate("conversations.history", { channel, oldest: after, inclusive: false, limit: 200 })) {
      for (const m of (page as ConversationsHistoryResponse).messages ?? []) if (m.ts) missed.push({ ...m, ts: m.ts, channel });
      if (++pages >= 20) {
        this.ctx.log.warn({ channel, pages }, "backfill stopped at its page limit; older missed messages are skipped");
        break;
      }
    }
    return missed.sort((a, b) => compareTs(a.ts, b.ts));
  }

  private isOwn(ev: SlackMessageEvent): boolean {
    return (!!ev.user && ev.user === this.self.userId) || (!!ev.bot_id && ev.bot_id === this.self.botId);
  }

  /**
   * One Slack message -> a message to mom: id = ts (unique in the channel), `<@U…>` -> `@name` in
   * `text` with the original in `rawText`, a thread reply answered in its thread (`replyTo`). It
   * addresses mom when it is a DM or mentions her; a bot's never does. A refused DM is told there.
   */
  private async convert(ev: SlackMessageEvent): Promise<PlatformMessage | undefined> {
    if (!isConversationMessage(ev) || this.isOwn(ev)) return undefined;
    const person = ev.user ? await this.directory.users.resolve(ev.user) : { id: ev.bot_id ?? "unknown", username: ev.username || ev.bot_id || "bot", isBot: true };
    // An app's message carries its bot_id, whatever users.info says of its user (or cannot: another organization's).
    const sender = ev.bot_id ? { ...person, isBot: true } : person;
    // app_mention events and conversations.history say no channel_type; a DM's id starts with D.
    const isDirect = ev.channel_type === "im" || (ev.channel_type === undefined && ev.channel.startsWith("D"));
    const raw = ev.text ?? "";
    const mentionsMom = raw.includes(`<@${this.self.userId}>`) || raw.includes(`<@${this.self.userId}|`);
    return {
      id: ev.ts,
      channelId: ev.channel,
      timestamp: tsToIso(ev.ts),
      sender,
      text: mrkdwnToText(raw, { user: (id) => this.directory.users.get(id)?.username, channel: (id) => this.directory.channels.get(id) }),
      rawText: raw,
      isMention: !sender.isBot && (isDirect || mentionsMom),
      isDirect,
      ...(ev.thread_ts && ev.thread_ts !== ev.ts && { replyTo: ev.thread_ts }),
      files: await Promise.all((ev.files ?? []).map((f) => slackFile(this.client, f, this.ctx.settings.botToken))),
      refuse: (text) => this.client.chat.postMessage({ channel: ev.channel, text }),
    };
  }
}
