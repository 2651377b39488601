import type { Logger } from "pino";

export const WHATSAPP_OPTIONS = Symbol("WHATSAPP_OPTIONS");

export interface WhatsAppIngressOptions {
  /** Adapter name from config.json (type "whatsapp"), the subject token. */
  adapter: string;
  accessToken: string;
  appSecret: string;
  verifyToken: string;
  phoneNumberId: string;
  /** Graph API version (default v21.0). */
  graphVersion?: string;
  /** Graph API root (default Meta's own). */
  apiUrl?: string;
  /** Port of the webhook server; 0 picks a free one (tests). Default 8080. */
  webhookPort?: number;
  /** Address the webhook server binds (default all interfaces: it sits behind an Ingress). */
  webhookHost?: string;
  admins?: string[];
  dm?: "everyone" | "none" | string[];
  maxAttachmentBytes?: number;
  logger: Logger;
  /** How long a rate-limited send is retried before it is given up (default 2 minutes). */
  rateLimitRetryMs?: number;
}

/** WhatsApp's limit for a text message body. */
export const WHATSAPP_MESSAGE_LIMIT = 4096;
export const WEBHOOK_PATH = "/webhook";
export const DEFAULT_GRAPH_VERSION = "v21.0";
