import { type IngressDefinition, markdownToMrkdwn, metrics, type PlatformConnection, type PlatformContext } from "@mom/ingress-sdk";
import { App, SocketModeReceiver } from "@slack/bolt";
import { type WebClient, WebClientEvent } from "@slack/web-api";
import { boltLogger } from "./bolt-logger.js";
import { SlackDirectory } from "./slack-directory.js";
import { SlackEvents } from "./slack-events.js";
import type { SlackMessageEvent } from "./slack-inbound.js";
import { DEFAULT_MESSAGE_LIMIT, DEFAULT_UPDATE_INTERVAL_MS, SlackSettings } from "./slack-options.js";
import { WebApiPoster } from "./slack-poster.js";
import { APPROVAL_ALLOW, APPROVAL_DENY, SlackLayout } from "./slack-renderer.js";

/** The parts of a block_actions payload the approval buttons use. */
interface ApprovalClickBody {
  user: { id: string; username?: string; name?: string };
  channel?: { id: string };
  container?: { channel_id?: string; thread_ts?: string };
}

/**
 * One Slack workspace over Socket Mode: message events (and, on start, what was missed meanwhile)
 * become messages of `<adapter>/<channel>`, runs are drawn by the SlackLayout (see docs/slack.md).
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
    let auth;
    try {
      auth = await client.auth.test();
    } catch (err) {
      throw new Error(`slack adapter ${adapter}: the bot token was refused (auth.test: ${(err as Error).message})`, { cause: err });
    }
    const self = { userId: auth.user_id ?? "", botId: auth.bot_id ?? "" };
    await app.init();
    const directory = new SlackDirectory(client, log);
    await directory.learn();

    const events = new SlackEvents(ctx, client, directory, self);
    app.event("message", async ({ event }) => events.event(event as unknown as SlackMessageEvent));
    app.event("app_mention", async ({ event }) => events.event(event as unknown as SlackMessageEvent));
    app.action({ action_id: new RegExp(`^(${APPROVAL_ALLOW}|${APPROVAL_DENY})$`) }, async ({ ack, body, action }) => {
      await ack();
      await onApprovalClick(ctx, client, directory, body as unknown as ApprovalClickBody, action as unknown as { action_id: string; value?: string });
    });
    app.error(async (err) => {
      log.error({ err }, `slack event handling failed: ${err.message}`);
    });
    const connection: PlatformConnection = {
      surface: new SlackLayout({
        api: new WebApiPoster(client),
        toMrkdwn: (md) => markdownToMrkdwn(md, { userIdFor: (name) => directory.userIdFor(name) }),
        log,
        messageLimit: s.messageLimit ?? DEFAULT_MESSAGE_LIMIT,
      }),
      editIntervalMs: DEFAULT_UPDATE_INTERVAL_MS,
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
    };
    return connection;
  },
};

/** Allow once / Deny on an approval prompt; someone who may not decide is told privately, next to the prompt. */
async function onApprovalClick(ctx: PlatformContext<SlackSettings>, client: WebClient, directory: SlackDirectory, body: ApprovalClickBody, action: { action_id: string; value?: string }): Promise<void> {
  const approvalId = action.value;
  if (!approvalId) return;
  const user = body.user.id;
  const username = body.user.username ?? body.user.name ?? (await directory.resolveUser(user)).username;
  const channel = body.channel?.id ?? body.container?.channel_id;
  const decision = action.action_id === APPROVAL_ALLOW ? "allow-once" : "deny";
  const { refusal } = await ctx.inbound.decide({ approvalId, decision, user: { id: user, username }, ...(channel && { channel }) }).catch((err: unknown) => {
    ctx.log.error({ err, approvalId }, "could not publish the approval decision");
    return { refusal: undefined };
  });
  if (!refusal || !channel) return;
  const threadTs = body.container?.thread_ts;
  await client.chat.postEphemeral({ channel, user, text: refusal, ...(threadTs && { thread_ts: threadTs }) }).catch((err: unknown) => ctx.log.warn({ err }, "could not tell a non-approver"));
}
