import type { PlatformContext, PlatformMessage } from "@mom/ingress-sdk";
import type { WebClient } from "@slack/web-api";
import { lastPublishedTs, missedMessages } from "./slack-backfill.js";
import type { SlackDirectory } from "./slack-directory.js";
import { downloadSlackFile } from "./slack-files.js";
import { isConversationMessage, type SlackMessageEvent, toChannelMessage } from "./slack-inbound.js";
import { DEFAULT_BACKFILL_ANSWER_WINDOW_MS, type SlackSettings } from "./slack-options.js";

/** Who mom is in the workspace (auth.test). */
export interface SlackSelf {
  userId: string;
  botId: string;
}

/**
 * What people say in Slack, to the shell: Socket Mode events as they come, and on start what was
 * said while mom was away (backfill), each converted in its turn (user lookups take a Web API call).
 */
export class SlackEvents {
  constructor(
    private readonly ctx: PlatformContext<SlackSettings>,
    private readonly client: WebClient,
    private readonly directory: SlackDirectory,
    private readonly self: SlackSelf,
  ) {}

  /** A `message` or `app_mention` event. Not awaited by Bolt beyond queueing: a slow download must not hold the socket. */
  event(ev: SlackMessageEvent): void {
    if (!isConversationMessage(ev) || this.isOwn(ev)) return;
    // app_mention + message for one mention, and Slack's retries: the shell takes each once.
    void this.ctx.inbound.receiveInTurn(ev.channel, ev.ts, () => this.convert(ev, "event")).catch(() => {});
  }

  /**
   * Backfill: every channel of this adapter that mom has heard from (its messages on the inbound
   * stream) is caught up from where mom left off, ahead of live events there.
   */
  async backfill(): Promise<void> {
    const { history, inbound, log } = this.ctx;
    let channels;
    try {
      channels = await history.lastOfEachChannel();
    } catch (err) {
      log.error({ err }, `backfill is off: cannot read this adapter's messages on the inbound stream: ${(err as Error).message}`);
      return;
    }
    for (const { channelId, last } of channels) {
      let after: string | undefined;
      const missed = async () => {
        after = await lastPublishedTs(history, channelId, last);
        if (!after) return [];
        const found = await missedMessages({ client: this.client, channel: channelId, after, log });
        const out: PlatformMessage[] = [];
        for (const ev of found) {
          const m = await this.convert({ ...ev, channel: channelId }, "backfill");
          if (m) out.push(m);
        }
        return out;
      };
      void inbound.catchUp(channelId, missed).then(
        (count) => count && log.info({ channel: channelId, count, after }, "backfilled messages missed while offline"),
        (err: unknown) => log.warn({ err, channel: channelId }, "backfill failed"),
      );
    }
  }

  private isOwn(ev: SlackMessageEvent): boolean {
    return (!!ev.user && ev.user === this.self.userId) || (!!ev.bot_id && ev.bot_id === this.self.botId);
  }

  /** One Slack message -> a message to mom; a backfilled one answers only while it is fresh, and a refused DM is not told again. */
  private async convert(ev: SlackMessageEvent, source: "event" | "backfill"): Promise<PlatformMessage | undefined> {
    if (!isConversationMessage(ev) || this.isOwn(ev)) return undefined;
    const { settings: s } = this.ctx;
    const sender = ev.user ? await this.directory.resolveUser(ev.user) : { id: ev.bot_id ?? "unknown", username: ev.username || ev.bot_id || "bot", isBot: true };
    const isDirect = ev.channel_type === "im" || (ev.channel_type === undefined && this.directory.isIm(ev.channel));
    const { attachments: _none, ...message } = toChannelMessage(ev, {
      botUserId: this.self.userId,
      sender,
      names: { user: (id) => this.directory.user(id)?.username, channel: (id) => this.directory.channelName(id) },
      isDirect,
      attachments: [],
    });
    const files = (ev.files ?? []).map((f) => ({
      filename: f.name || f.title || f.id || "file",
      ...(f.size !== undefined && { size: f.size }),
      ...(f.mimetype && { mimeType: f.mimetype }),
      download: (max: number) => downloadSlackFile(f, s.botToken, max),
    }));
    if (source === "event") return { ...message, files, refuse: (text) => this.client.chat.postMessage({ channel: ev.channel, text }) };
    const age = Date.now() - Date.parse(message.timestamp);
    const answer = message.isMention && age <= (s.backfillAnswerWindowMs ?? DEFAULT_BACKFILL_ANSWER_WINDOW_MS);
    return { ...message, isMention: answer, metadata: { backfilled: true }, files, refuse: async () => {} };
  }
}
