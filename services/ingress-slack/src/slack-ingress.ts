import { type IngressDefinition, markdownToMrkdwn, metrics, ThreadedLayout } from "@mom/ingress-sdk";
import { App, type BlockButtonAction, SocketModeReceiver } from "@slack/bolt";
import { WebClientEvent } from "@slack/web-api";
import { boltLogger } from "./bolt-logger.js";
import { SlackDirectory } from "./slack-directory.js";
import { SlackEvents } from "./slack-events.js";
import type { SlackMessageEvent } from "./slack-inbound.js";
import { SlackSettings } from "./slack-options.js";
import { APPROVAL_ALLOW, APPROVAL_DENY, slackDialect, type SlackPrompt, SlackSurface } from "./slack-renderer.js";

/**
 * One Slack workspace over Socket Mode: message events (and, on start, what was missed meanwhile)
 * become messages of `<adapter>/<channel>`, runs are drawn by the SDK's ThreadedLayout over the
 * SlackSurface (see docs/slack.md).
 * Everything else is the ingress shell's.
 */
export const slackIngress: IngressDefinition<typeof SlackSettings> = {
  platform: "slack",
  settings: SlackSettings,
  async connect(ctx) {
    const { settings: s, log, adapter } = ctx;
    const logger = boltLogger(log.child({ component: "bolt" }));
    // Socket Mode opens its connection through its own WebClient, built from installerOptions.clientOptions.
    const receiver = new SocketModeReceiver({
      appToken: s.appToken,
      logger,
      ...(s.socketPingTimeoutMs && { clientPingTimeout: s.socketPingTimeoutMs }),
      installerOptions: { clientOptions: { ...(s.apiUrl && { slackApiUrl: s.apiUrl }) } },
    });
    const clientOptions = { ...(s.apiUrl && { slackApiUrl: s.apiUrl }), ...(s.retryConfig && { retryConfig: s.retryConfig }) };
    const app = new App({ token: s.botToken, receiver, logger, clientOptions, deferInitialization: true });
    const client = app.client;
    client.on(WebClientEvent.RATE_LIMITED, () => metrics.platformRateLimits.inc({ adapter }));
    const auth = await client.auth.test().catch((err: unknown) => {
      throw new Error(`slack adapter ${adapter}: the bot token was refused (auth.test: ${(err as Error).message})`, { cause: err });
    });
    const self = { userId: auth.user_id ?? "", botId: auth.bot_id ?? "" };
    await app.init();
    const directory = new SlackDirectory(client, log);
    await directory.learn();

    const toMrkdwn = (md: string) => markdownToMrkdwn(md, { userIdFor: (name) => directory.users.idOf(name) });
    const events = new SlackEvents(ctx, client, directory, self);
    for (const type of ["message", "app_mention"] as const) app.event(type, async ({ event }) => events.event(event as unknown as SlackMessageEvent));
    // Allow once / Deny on an approval prompt; someone who may not decide is told privately, next to
    // the prompt, before the decision goes onto the bus.
    app.action<BlockButtonAction>({ action_id: new RegExp(`^(${APPROVAL_ALLOW}|${APPROVAL_DENY})$`) }, async ({ ack, body, action }) => {
      await ack();
      if (!action.value) return;
      const user = { id: body.user.id, username: body.user.username ?? body.user.name ?? (await directory.users.resolve(body.user.id)).username };
      const channel = body.channel?.id ?? body.container?.channel_id;
      const threadTs = body.container?.thread_ts;
      const tell = async ({ refusal }: { refusal?: string }) =>
        refusal && channel && client.chat.postEphemeral({ channel, user: user.id, text: refusal, ...(threadTs && { thread_ts: threadTs }) }).catch((err: unknown) => log.warn({ err }, "could not tell a non-approver"));
      const m = body.message;
      // The prompt as it is on screen, without its buttons: one of before a restart is closed the same way.
      const prompt: SlackPrompt | undefined = m && { ts: m.ts, sections: ((m.blocks ?? []) as { type?: string }[]).filter((b) => b.type !== "actions") };
      const click = { approvalId: action.value, decision: action.action_id === APPROVAL_ALLOW ? ("allow-once" as const) : ("deny" as const), user, ...(channel && { channel }), ...(prompt && { prompt: { ref: prompt, ...(m?.text && { text: m.text as string }) } }) };
      await ctx.inbound.decide(click, tell).catch((err: unknown) => log.error({ err, approvalId: click.approvalId }, "could not publish the approval decision"));
    });
    app.error(async (err) => log.error({ err }, `slack event handling failed: ${err.message}`));
    return {
      surface: new ThreadedLayout(new SlackSurface(client, slackDialect(s.messageLimit ?? 3900, toMrkdwn)), log),
      editIntervalMs: 1000, // at most one flush (main message and details) a second per run
      async start() {
        // Queued ahead of the live events that Socket Mode brings from now on.
        if (s.backfill !== false) await events.backfill();
        await app.start();
        log.info({ adapter, botUserId: self.userId }, "slack ingress connected (Socket Mode)");
      },
      async stop() {
        await app.stop().catch((err: unknown) => log.warn({ err }, "socket mode disconnect failed"));
      },
      problem: () => (receiver.client.websocket?.isActive() ? undefined : "Slack Socket Mode not connected"),
      // conversations.members (scopes channels:read, groups:read, im:read, mpim:read): a DM's person, a channel's members.
      async canSee(userId, channelId) {
        for await (const page of client.paginate("conversations.members", { channel: channelId, limit: 200 })) {
          if (((page as { members?: string[] }).members ?? []).includes(userId)) return true;
        }
        return false;
      },
    };
  },
};
