import { type Static, Type } from "@mom/ingress-sdk";

/** The Discord adapter's own settings (config.json `adapters.<name>`, type "discord"). */
export const DiscordSettings = Type.Object({
  botToken: Type.String({ minLength: 1, expected: 'a non-empty string (literal or "env:NAME")', description: "Bot token (Discord developer portal > Bot)" }),
  apiUrl: Type.Optional(Type.String({ minLength: 1, expected: "a URL like http://127.0.0.1:<port>/api", description: "REST base URL as discord.js takes it (default Discord's own)" })),
  readyTimeoutMs: Type.Optional(Type.Integer({ minimum: 1, expected: "milliseconds", description: "How long start-up waits for the gateway to be ready (default 60 s)" })),
});
export type DiscordSettings = Static<typeof DiscordSettings>;

/** Discord's limit for one message's content. */
export const DISCORD_MESSAGE_LIMIT = 2000;
