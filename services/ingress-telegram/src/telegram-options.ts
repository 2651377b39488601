import { type Static, Type } from "@mom/ingress-sdk";

/** The Telegram adapter's own settings (config.json `adapters.<name>`, type "telegram"). */
export const TelegramSettings = Type.Object({
  botToken: Type.String({ minLength: 1, description: "Bot token from @BotFather" }),
  /** Bot API root (default Telegram's own); grammY's `client.apiRoot`. */
  apiUrl: Type.Optional(Type.String({ minLength: 1 })),
  /** getUpdates long-polling timeout in seconds (default 30). */
  pollTimeoutSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 50 })),
  /** Webhook mode: the public URL Telegram posts updates to (it reaches this service's webhook server). */
  webhookUrl: Type.Optional(Type.String({ pattern: "^https?://" })),
  /** Checked on every webhook post (X-Telegram-Bot-Api-Secret-Token); required with webhookUrl. */
  webhookSecret: Type.Optional(Type.String({ minLength: 1 })),
  /** Port of the webhook server (default 8080; 0 picks a free one). */
  webhookPort: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  webhookHost: Type.Optional(Type.String({ minLength: 1 })),
});
export type TelegramSettings = Static<typeof TelegramSettings>;
