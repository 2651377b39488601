import type { Logger } from "pino";

export const TELEGRAM_OPTIONS = Symbol("TELEGRAM_OPTIONS");

export interface TelegramIngressOptions {
  /** Adapter name from config.json (type "telegram"), the subject token. */
  adapter: string;
  botToken: string;
  /** Bot API root (default Telegram's own); grammY's `client.apiRoot`. */
  apiUrl?: string;
  /** Telegram user ids; they may always DM mom and decide approvals. */
  admins?: string[];
  dm?: "everyone" | "none" | string[];
  /** config `attachments.maxBytes`. Telegram's Bot API hands out files up to 20 MB anyway. */
  maxAttachmentBytes?: number;
  logger: Logger;
  /** Shortest time between two edits of a run's progress message (default 1,500 ms; Telegram allows about one edit per second per chat). */
  editIntervalMs?: number;
  /** How often "typing…" is renewed during a run (default 4,500 ms; Telegram shows it 5 s). */
  typingIntervalMs?: number;
  /** getUpdates long-polling timeout in seconds (default 30). */
  pollTimeoutSeconds?: number;
  /** Webhook mode: the public URL Telegram posts updates to (it reaches this service's webhook server). */
  webhookUrl?: string;
  /** Checked on every webhook post (X-Telegram-Bot-Api-Secret-Token); required with webhookUrl. */
  webhookSecret?: string;
  /** Port of the webhook server (default 8080; 0 picks a free one). */
  webhookPort?: number;
  webhookHost?: string;
}

/** Telegram's limit for one message, in characters after entity parsing. */
export const TELEGRAM_MESSAGE_LIMIT = 4096;
