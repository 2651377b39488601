import { type Bot, type Transformer, webhookCallback } from "grammy";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import type { TelegramSettings } from "./telegram-options.js";

/** How updates arrive; `stop` ends it. */
export interface UpdateSource {
  describe: string;
  /** Why updates cannot arrive now (for /readyz), or undefined. */
  problem(): string | undefined;
  stop(): Promise<void>;
}

const ALLOWED_UPDATES = ["message", "callback_query"] as const;

/**
 * Whether getUpdates works: grammY retries a failing getUpdates forever (and auto-retry retries 5xx
 * inside one call), all while the bot stays "running". The transformer must be installed under
 * auto-retry so it sees every attempt. The first failure and the recovery are logged.
 */
export function getUpdatesHealth(log: Logger): { transformer: Transformer; problem(): string | undefined } {
  let failing: { since: string; why: string } | undefined;
  const failed = (why: string) => {
    if (!failing) log.warn({ why }, `telegram getUpdates failed (retrying): ${why}`);
    failing ??= { since: new Date().toISOString(), why };
  };
  return {
    transformer: async (prev, method, payload, signal) => {
      if (method !== "getUpdates") return prev(method, payload, signal);
      try {
        const res = await prev(method, payload, signal);
        if (res.ok) {
          if (failing) log.info({ since: failing.since }, "telegram getUpdates works again");
          failing = undefined;
        } else failed(`${res.error_code} ${res.description}`);
        return res;
      } catch (err) {
        if (!signal?.aborted) failed((err as Error).message);
        throw err;
      }
    },
    problem: () => (failing ? `Telegram getUpdates failing since ${failing.since}: ${failing.why}` : undefined),
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
export async function startWebhook(bot: Bot, opts: TelegramSettings & { webhookUrl: string; adapter: string }, log: Logger): Promise<UpdateSource & { port: number }> {
  if (!opts.webhookSecret) throw new Error(`telegram adapter "${opts.adapter}": webhookUrl needs webhookSecret, or anyone could post updates`);
  const handle = webhookCallback(bot, "http", { secretToken: opts.webhookSecret, onTimeout: "return" });
  const server = createServer((req, res) => void handle(req, res).catch((err: unknown) => log.error({ err }, "telegram webhook post failed")));
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(opts.webhookPort ?? 8080, opts.webhookHost ?? "0.0.0.0", resolve));
  await bot.api.setWebhook(opts.webhookUrl, { secret_token: opts.webhookSecret, allowed_updates: [...ALLOWED_UPDATES] });
  return {
    describe: `webhook ${opts.webhookUrl}`,
    problem: () => (server.listening ? undefined : "Telegram webhook server not listening"),
    port: (server.address() as AddressInfo).port,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
