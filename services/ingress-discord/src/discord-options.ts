import type { Logger } from "pino";

export const DISCORD_OPTIONS = Symbol("DISCORD_OPTIONS");

export type DmPolicy = "everyone" | "none" | string[];

export interface DiscordIngressOptions {
  /** Adapter name from config.json (type "discord"), the subject token. */
  adapter: string;
  botToken: string;
  /** REST base URL as discord.js takes it (`http://127.0.0.1:<port>/api`); default Discord's own. */
  apiUrl?: string;
  /** Discord user ids; they may always DM mom (and decide approvals, later). */
  admins?: string[];
  /** Who may DM mom: "everyone" (default), "none" or a list of user ids. Admins always may. */
  dm?: DmPolicy;
  /** config `attachments.maxBytes` (default 20 MiB): larger files are neither downloaded nor uploaded. */
  maxAttachmentBytes?: number;
  logger: Logger;
  /** Shortest time between two edits of a run's progress message (default 1,000 ms). */
  editIntervalMs?: number;
  /** How often the typing indicator is renewed during a run (default 8,000 ms; Discord shows it ~10 s). */
  typingIntervalMs?: number;
  /** How long start-up waits for the gateway to be ready (default 60 s). */
  readyTimeoutMs?: number;
}

/** Discord's limit for one message's content. */
export const DISCORD_MESSAGE_LIMIT = 2000;
