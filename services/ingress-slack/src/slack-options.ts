import type { Logger } from "pino";

export const SLACK_OPTIONS = Symbol("SLACK_OPTIONS");

export interface SlackIngressOptions {
  /** Adapter name from config.json (type "slack"), the subject token. */
  adapter: string;
  /** Bot token (xoxb-…): Web API calls and file downloads. */
  botToken: string;
  /** App-level token (xapp-…) with connections:write: Socket Mode. */
  appToken: string;
  /** Web API base URL (default https://slack.com/api/); tests point it at a fake. */
  apiUrl?: string;
  /** User ids that may always DM mom. */
  admins?: string[];
  /** Who may DM mom: "everyone" (default), "none" (admins only) or a list of user ids (plus admins). */
  dm?: "everyone" | "none" | string[];
  logger: Logger;
  /** config `attachments.maxBytes` (default 20 MiB): larger files are not downloaded nor uploaded. */
  maxAttachmentBytes?: number;
  /**
   * On start, fetch the messages missed while offline in every channel of this adapter that has
   * messages on the inbound stream (default true). Needs read access to the adapter's own
   * subjects of MOM_IN (deploy/nats/auth.conf).
   */
  backfill?: boolean;
  /** Backfilled mentions younger than this still get an answer; older ones are only logged (default 10 min). */
  backfillAnswerWindowMs?: number;
  /** At most one chat.update per progress message per this many ms (default 1000). */
  updateIntervalMs?: number;
  /** Longest text of one Slack message (default 3,900; Slack's advice is <= 4,000). */
  messageLimit?: number;
  /** Socket Mode ping timeout; also Bolt's delay before reconnecting a dropped socket (default 5000). */
  socketPingTimeoutMs?: number;
  /** Retry policy of the Web API client (p-retry options); default @slack/web-api's (10 retries in ~30 min). */
  retryConfig?: { retries: number; factor?: number; minTimeout?: number; maxTimeout?: number; randomize?: boolean };
}

export const DEFAULT_MESSAGE_LIMIT = 3900;
export const DEFAULT_UPDATE_INTERVAL_MS = 1000;
export const DEFAULT_BACKFILL_ANSWER_WINDOW_MS = 10 * 60_000;
