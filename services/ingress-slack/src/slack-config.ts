import { adapterEntry, type LoadedConfig } from "@mom/ingress-sdk";
import type { Logger } from "pino";
import type { SlackIngressOptions } from "./slack-options.js";

/** The ingress options of a `"type": "slack"` adapter in config.json (tokens already resolved from env:). */
export function slackOptionsFromConfig(adapter: string, loaded: LoadedConfig, logger: Logger): SlackIngressOptions {
  const slack = adapterEntry(loaded, adapter, "slack");
  return {
    adapter,
    botToken: slack.botToken,
    appToken: slack.appToken,
    ...(slack.apiUrl && { apiUrl: slack.apiUrl }),
    ...(slack.admins && { admins: slack.admins }),
    ...(slack.dm && { dm: slack.dm }),
    logger,
    maxAttachmentBytes: loaded.config.attachments.maxBytes,
  };
}
