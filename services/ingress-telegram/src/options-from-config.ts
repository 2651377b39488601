import { adapterEntry, type LoadedConfig } from "@mom/ingress-sdk";
import type { Logger } from "pino";
import type { TelegramIngressOptions } from "./telegram-options.js";

/** The ingress options of adapter `name` (type "telegram") in a loaded config.json. */
export function telegramOptionsFromConfig(name: string, loaded: LoadedConfig, logger: Logger): TelegramIngressOptions {
  const entry = adapterEntry(loaded, name, "telegram");
  return {
    adapter: name,
    botToken: entry.botToken,
    ...(entry.apiUrl && { apiUrl: entry.apiUrl }),
    ...(entry.webhookUrl && { webhookUrl: entry.webhookUrl }),
    ...(entry.webhookSecret && { webhookSecret: entry.webhookSecret }),
    ...(entry.webhookPort !== undefined && { webhookPort: entry.webhookPort }),
    ...(entry.admins && { admins: entry.admins }),
    ...(entry.dm !== undefined && { dm: entry.dm }),
    maxAttachmentBytes: loaded.config.attachments.maxBytes,
    logger,
  };
}
