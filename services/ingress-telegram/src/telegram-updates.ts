import { FailureWatch, type PlatformConnection, serveWebhook } from "@mom/ingress-sdk";
import { type Bot, type Transformer, webhookCallback } from "grammy";
import type { Logger } from "pino";
import type { TelegramSettings } from "./telegram-options.js";

/** How updates arrive (`describe`); the connection's `stop` and `problem` are its. */
export type UpdateSource = Required<Pick<PlatformConnection, "stop" | "problem">> & { describe: string };

const ALLOWED_UPDATES = ["message", "callback_query"] as const;

/**
 * Whether getUpdates works: grammY retries a failing getUpdates forever (and auto-retry retries 5xx
 * inside one call), all while the bot stays "running". The transformer must be installed under
 * auto-retry so it sees every attempt.
 */
export function getUpdatesHealth(log: Logger): { transformer: Transformer; problem(): string | undefined } {
  const watch = new FailureWatch("telegram getUpdates", log);
  return {
    transformer: async (prev, method, payload, signal) => {
      if (method !== "getUpdates") return prev(method, payload, signal);
      try {
        const res = await prev(method, payload, signal);
        if (res.ok) watch.works();
        else watch.failed(`${res.error_code} ${res.description}`);
        return res;
      } catch (err) {
        if (!signal?.aborted) watch.failed((err as Error).message);
        throw err;
      }
    },
    problem: () => watch.problem(),
  };
}

/** getUpdates long polling (the default): resolves once polling runs; rejects when it cannot start. */
export async function startPolling(bot: Bot, opts: TelegramSettings, log: Logger, health?: { problem(): string | undefined }): Promise<UpdateSource> {
  let polling!: Promise<void>;
  await new Promise<void>((resolve, reject) => {
    polling = bot.start({ allowed_updates: [...ALLOWED_UPDATES], timeout: opts.pollTimeoutSeconds ?? 30, onStart: () => resolve() }).catch((err: unknown) => {
      log.error({ err }, `telegram polling stopped: ${(err as Error).message}`);
      reject(err);
    });
  });
  return {
    describe: "long polling",
    problem: () => (bot.isRunning() ? health?.problem() : "Telegram long polling stopped"),
    async stop() {
      await bot.stop().catch((err: unknown) => log.warn({ err }, "stopping telegram polling failed"));
      await polling.catch(() => {});
    },
  };
}

/**
 * Webhook mode: an HTTP server whose every path takes Telegram's posts (a wrong or missing
 * X-Telegram-Bot-Api-Secret-Token is refused with 401 by grammY), and `setWebhook` pointing
 * Telegram at `webhookUrl`.
 */
export async function startWebhook(bot: Bot, opts: TelegramSettings & { webhookUrl: string; adapter: string }, log: Logger): Promise<UpdateSource> {
  if (!opts.webhookSecret) throw new Error(`telegram adapter "${opts.adapter}": webhookUrl needs webhookSecret, or anyone could post updates`);
  const handle = webhookCallback(bot, "http", { secretToken: opts.webhookSecret, onTimeout: "return" });
  const http = await serveWebhook({ port: opts.webhookPort ?? 8080, host: opts.webhookHost ?? "0.0.0.0", log, handle: (req, res) => handle(req, res) });
  await bot.api.setWebhook(opts.webhookUrl, { secret_token: opts.webhookSecret, allowed_updates: [...ALLOWED_UPDATES] });
  return {
    describe: `webhook ${opts.webhookUrl}`,
    problem: () => (http.listening() ? undefined : "Telegram webhook server not listening"),
    stop: () => http.close(),
  };
}
