import { autoRetry } from "@grammyjs/auto-retry";
import { downloadFile, type IngressDefinition, metrics, parseApprovalButton, type PlatformContext, whenStored } from "@mom/ingress-sdk";
import { Bot, type Context, GrammyError } from "grammy";
import type { Message } from "grammy/types";
import { type BotIdentity, senderOf, type TelegramFile, toTelegramInbound } from "./telegram-inbound.js";
import { TelegramSettings } from "./telegram-options.js";
import { APPROVAL_BUTTON_PREFIX, TelegramSurface } from "./telegram-surface.js";
import { getUpdatesHealth, HeldUpdates, startPolling, startWebhook, type UpdateSource } from "./telegram-updates.js";

/**
 * One Telegram bot: updates (getUpdates long polling, or a webhook) become messages of
 * `<adapter>/<chat id>`, runs are drawn as messages edited in place over the Bot API (see
 * docs/telegram.md). Everything else is the ingress shell's.
 */
export const telegramIngress: IngressDefinition<typeof TelegramSettings> = {
  platform: "telegram",
  settings: TelegramSettings,
  async connect(ctx) {
    const { settings: s, log, adapter } = ctx;
    const health = getUpdatesHealth(log);
    const bot = new Bot(s.botToken, { client: { ...(s.apiUrl && { apiRoot: s.apiUrl }) } });
    // Installed first, so it sits under auto-retry and sees every 429 attempt, not only the last.
    bot.api.config.use(async (prev, method, payload, signal) => {
      const res = await prev(method, payload, signal);
      if (!res.ok && res.error_code === 429) metrics.platformRateLimits.inc({ adapter });
      return res;
    });
    bot.api.config.use(health.transformer);
    // 429 Too Many Requests: wait `retry_after` and retry, so coalesced edits and answers are never lost.
    bot.api.config.use(autoRetry({ maxRetryAttempts: 5, maxDelaySeconds: 300 }));
    // Long polling: the offset stays behind what is not stored on the bus yet (HeldUpdates says why).
    const held = s.webhookUrl ? undefined : new HeldUpdates(log);
    if (held) bot.api.config.use(held.transformer);
    try {
      await bot.init();
    } catch (err) {
      const why = err instanceof GrammyError && err.error_code === 401 ? "the bot token was refused" : "could not reach the Bot API";
      throw new Error(`telegram adapter "${adapter}": ${why} (getMe: ${(err as Error).message})`, { cause: err });
    }
    const me: BotIdentity = { id: bot.botInfo.id, username: bot.botInfo.username };
    bot.on("message", (c) => {
      const handled = onMessage(ctx, bot, me, c.message);
      // Polling: the offset waits for it (HeldUpdates); webhook: the post's answer does.
      if (handled && held) held.track(c.update.update_id, handled);
      else if (handled) return whenStored([handled]);
    });
    bot.on("callback_query:data", (c) => onButton(ctx, c));
    // A failing handler is logged; receiving goes on.
    bot.catch((err) => log.error({ err: err.error, updateId: err.ctx.update.update_id }, `telegram update handling failed: ${(err.error as Error)?.message ?? err.error}`));
    let updates: UpdateSource | undefined;
    return {
      surface: new TelegramSurface(bot.api),
      editIntervalMs: 1500, // Telegram allows about one edit per second per chat
      typingIntervalMs: 4500, // "typing…" shows for 5 s
      async start() {
        updates = s.webhookUrl ? await startWebhook(bot, { ...s, webhookUrl: s.webhookUrl, adapter }, log) : await startPolling(bot, s, log, health, held);
        return { bot: me.username, via: updates.describe };
      },
      stop: async () => updates?.stop(),
      problem: () => updates?.problem(),
      // A person sees their own private chat with the bot, and a group while they are in it.
      async canSee(userId, chatId) {
        if (userId === chatId) return true;
        const member = await bot.api.getChatMember(chatId, Number(userId));
        return member.status === "creator" || member.status === "administrator" || member.status === "member" || (member.status === "restricted" && member.is_member);
      },
    };
  },
};

/**
 * The message's handling (undefined for none), which Telegram must not be told is done before it
 * settled; with polling it is not awaited, so a slow download does not hold the batch's other chats.
 */
function onMessage(ctx: PlatformContext<TelegramSettings>, bot: Bot, me: BotIdentity, msg: Message): Promise<boolean> | undefined {
  if (msg.from?.id === me.id) return;
  const m = toTelegramInbound(msg, me, (f) => (max, signal) => download(ctx.settings, bot, f, max, signal));
  if (!m) return;
  return ctx.inbound.receive({ ...m, refuse: (text) => bot.api.sendMessage(msg.chat.id, text) });
}

/** getFile, then the bytes from the Bot API's file endpoint. */
async function download(s: TelegramSettings, bot: Bot, f: TelegramFile, maxBytes: number, signal?: AbortSignal): Promise<{ bytes: Uint8Array; mimeType?: string }> {
  const file = await bot.api.getFile(f.fileId);
  if (!file.file_path) throw new Error("Telegram gave no file path (files over 20 MB cannot be downloaded by bots)");
  const root = s.apiUrl ?? "https://api.telegram.org";
  return downloadFile(`${root}/file/bot${s.botToken}/${file.file_path}`, maxBytes, { signal });
}

/** Allow once / Deny -> the decision; a non-approver is told so in an alert only they see. */
async function onButton(ctx: PlatformContext<TelegramSettings>, c: Context): Promise<void> {
  const q = c.callbackQuery!;
  const parsed = parseApprovalButton(q.data ?? "", APPROVAL_BUTTON_PREFIX);
  if (!parsed) return void (await c.answerCallbackQuery());
  const sender = senderOf(q.from);
  const m = q.message;
  // The prompt comes with the click: one of before a restart is closed with the outcome too. Not
  // its text: Telegram gives it back without the formatting that set the model's arguments apart,
  // and a line the model wrote there ("✓ Allowed once by …") would read like the outcome.
  const prompt = m && { ref: String(m.message_id) };
  const { refusal } = await ctx.inbound.decide({ ...parsed, user: { id: sender.id, username: sender.username }, ...(m && { channel: String(m.chat.id), prompt }) });
  // Markdown notes are for messages; an alert is plain text.
  await c.answerCallbackQuery(refusal ? { text: refusal.replace(/\[(\d+)\]\(tg:\/\/user\?id=\d+\)/g, "$1"), show_alert: true } : {});
}
