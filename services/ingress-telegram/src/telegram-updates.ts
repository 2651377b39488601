import { type AbortSignalLike, FailureWatch, HeldAcknowledgements, type PlatformConnection, serveWebhook } from "@mom/ingress-sdk";
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

/**
 * Keeps Telegram's getUpdates offset behind every message not yet stored on the bus. A getUpdates
 * call with `offset` confirms every earlier update, and Telegram then forgets them; grammY asks for
 * the next batch as soon as its handlers return, and ours return at once (a chat's slow download
 * must not hold the others), while `inbound.receive` may be retrying its publish through a NATS
 * outage (two of three nodes down: JetStream stores nothing for as long). Without this, the offset
 * ran ahead of what was stored, and a process that died then, or a publish that gave up, lost
 * those messages for good (test/chaos/quorum-loss.test.ts). So each getUpdates waits until every
 * update below its offset is handled, and asks again from the lowest that failed, if any (the
 * intake and JetStream's msg-id drop the ones already stored when Telegram sends them again).
 * While it waits nothing new is fetched: what people send meanwhile stays with Telegram. The price:
 * the next batch is fetched only once this one is stored, so a file that takes long to download
 * delays the messages that come after it (the messages of one batch are still handled at once).
 */
export class HeldUpdates extends HeldAcknowledgements<number> {
  constructor(private readonly log: Logger) {
    super({ log, holding: "holding Telegram updates whose messages are not stored yet: not confirming them to Telegram, and fetching no more, until they are" });
  }

  /** The offset a getUpdates asking for `requested` may send. */
  async offset(requested: number, signal?: AbortSignalLike): Promise<number> {
    const held = await this.unstored((id) => id < requested, { signal });
    if (held.length === 0) return requested;
    const offset = Math.min(...held);
    this.log.warn({ offset, requested }, "asking Telegram again for updates whose messages could not be stored");
    return offset;
  }

  /** Installed outermost (last), so it waits once per call, not per retry of auto-retry. */
  readonly transformer: Transformer = async (prev, method, payload, signal) => {
    const p = payload as { offset?: number };
    if (method === "getUpdates" && typeof p.offset === "number") payload = { ...payload, offset: await this.offset(p.offset, signal) };
    return prev(method, payload, signal);
  };
}

/** getUpdates long polling (the default): resolves once polling runs; rejects when it cannot start. */
export async function startPolling(bot: Bot, opts: TelegramSettings, log: Logger, health?: { problem(): string | undefined }, held?: HeldUpdates): Promise<UpdateSource> {
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
      held?.stop();
      await bot.stop().catch((err: unknown) => log.warn({ err }, "stopping telegram polling failed"));
      await polling.catch(() => {});
    },
  };
}

/**
 * Webhook mode: an HTTP server whose every path takes Telegram's posts (a wrong or missing
 * X-Telegram-Bot-Api-Secret-Token is refused with 401 by grammY), and `setWebhook` pointing
 * Telegram at `webhookUrl`. A post is answered once its handler settled, 500 when it failed (then
 * Telegram sends it again and holds the chat's later updates meanwhile); grammY's own timeout
 * (10 s) throws rather than answer 200 for an update not stored.
 */
export async function startWebhook(bot: Bot, opts: TelegramSettings & { webhookUrl: string; adapter: string }, log: Logger): Promise<UpdateSource> {
  if (!opts.webhookSecret) throw new Error(`telegram adapter "${opts.adapter}": webhookUrl needs webhookSecret, or anyone could post updates`);
  const handle = webhookCallback(bot, "http", { secretToken: opts.webhookSecret });
  const http = await serveWebhook({ port: opts.webhookPort ?? 8080, host: opts.webhookHost ?? "0.0.0.0", log, handle: (req, res) => handle(req, res) });
  await bot.api.setWebhook(opts.webhookUrl, { secret_token: opts.webhookSecret, allowed_updates: [...ALLOWED_UPDATES] });
  return {
    describe: `webhook ${opts.webhookUrl}`,
    problem: () => (http.listening() ? undefined : "Telegram webhook server not listening"),
    stop: () => http.close(),
  };
}
