import { adapterEntry, type LoadedConfig } from "@mom/ingress-sdk";
import type { Logger } from "pino";
import type { DiscordIngressOptions } from "./discord-options.js";

/** The ingress options of adapter `name` (type "discord") in a loaded config.json. */
export function discordOptionsFromConfig(name: string, loaded: LoadedConfig, logger: Logger): DiscordIngressOptions {
  const entry = adapterEntry(loaded, name, "discord");
  return {
    adapter: name,
    botToken: entry.botToken,
    ...(entry.apiUrl && { apiUrl: entry.apiUrl }),
    ...(entry.admins && { admins: entry.admins }),
    ...(entry.dm !== undefined && { dm: entry.dm }),
    maxAttachmentBytes: loaded.config.attachments.maxBytes,
    logger,
  };
}
