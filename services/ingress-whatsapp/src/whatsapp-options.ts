import { type Static, Type } from "@mom/ingress-sdk";

const secret = (description: string) => Type.String({ minLength: 1, expected: 'a non-empty string (literal or "env:NAME")', description });

/** The WhatsApp adapter's own settings (config.json `adapters.<name>`, type "whatsapp"). */
export const WhatsAppSettings = Type.Object({
  accessToken: secret("System-user access token of the Meta app (permanent), for the Graph API"),
  appSecret: secret("App secret of the Meta app: webhook posts are signed with it (X-Hub-Signature-256)"),
  verifyToken: secret("Any secret string; Meta sends it back when the webhook URL is verified"),
  phoneNumberId: Type.String({ pattern: "^[0-9]+$", expected: "the phone number id (digits) from WhatsApp > API Setup", description: "The business number mom answers as" }),
  graphVersion: Type.Optional(Type.String({ pattern: "^v[0-9]+\\.[0-9]+$", expected: 'a Graph API version such as "v21.0"', description: "Graph API version (default v21.0)" })),
  apiUrl: Type.Optional(Type.String({ minLength: 1, expected: "a URL", description: "Graph API root (default Meta's own)" })),
  webhookPort: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535, expected: "a port number (0 picks a free one)", description: "Port of the webhook server (default 8080)" })),
  webhookHost: Type.Optional(Type.String({ minLength: 1, expected: "an address to bind", description: "Address the webhook server binds (default all interfaces: it sits behind an Ingress)" })),
  rateLimitRetryMs: Type.Optional(Type.Integer({ minimum: 0, expected: "milliseconds", description: "How long a rate-limited send is retried before it is given up (default 2 minutes)" })),
});
export type WhatsAppSettings = Static<typeof WhatsAppSettings>;

/** WhatsApp's limit for a text message body. */
export const WHATSAPP_MESSAGE_LIMIT = 4096;
export const WEBHOOK_PATH = "/webhook";
export const DEFAULT_GRAPH_VERSION = "v21.0";
