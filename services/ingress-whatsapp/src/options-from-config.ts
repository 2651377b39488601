import { adapterEntry, type LoadedConfig } from "@mom/ingress-sdk";
import type { Logger } from "pino";
import type { WhatsAppIngressOptions } from "./whatsapp-options.js";

/** The ingress options of adapter `name` (type "whatsapp") in a loaded config.json. */
export function whatsappOptionsFromConfig(name: string, loaded: LoadedConfig, logger: Logger): WhatsAppIngressOptions {
  const entry = adapterEntry(loaded, name, "whatsapp");
  return {
    adapter: name,
    accessToken: entry.accessToken,
    appSecret: entry.appSecret,
    verifyToken: entry.verifyToken,
    phoneNumberId: entry.phoneNumberId,
    ...(entry.graphVersion && { graphVersion: entry.graphVersion }),
    ...(entry.apiUrl && { apiUrl: entry.apiUrl }),
    ...(entry.webhookPort !== undefined && { webhookPort: entry.webhookPort }),
    ...(entry.admins && { admins: entry.admins }),
    ...(entry.dm !== undefined && { dm: entry.dm }),
    maxAttachmentBytes: loaded.config.attachments.maxBytes,
    logger,
  };
}
