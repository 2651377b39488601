import type { MissedMessages } from "@mom/ingress-sdk";
import type { ConversationsHistoryResponse } from "@slack/web-api";

type HistoryMessage = NonNullable<ConversationsHistoryResponse["messages"]>[number];

/** What mom reads of a file as Slack describes it (in a message, or files.info's). */
export type SlackFile = Pick<NonNullable<HistoryMessage["files"]>[number], "id" | "name" | "title" | "size" | "mimetype" | "mode" | "file_access" | "url_private" | "url_private_download">;

/** A `message` / `app_mention` event, or a message from conversations.history (with its channel). */
export type SlackMessageEvent = Omit<HistoryMessage, "ts" | "channel"> & { ts: string; channel: string; channel_type?: string };

// Message subtypes that are something a person (or another bot) said. Edits, deletions, joins,
// topic changes and the like are not messages to mom.
const SAID = new Set([undefined, "file_share", "thread_broadcast", "me_message", "bot_message"]);

export function isConversationMessage(ev: SlackMessageEvent): boolean {
  return SAID.has(ev.subtype) && !ev.hidden && typeof ev.ts === "string" && typeof ev.channel === "string";
}

/** Slack `ts` ("1732184400.000100") -> ISO 8601. */
export function tsToIso(ts: string): string {
  return new Date(Number(micros(ts) / 1000n)).toISOString();
}

/** Slack `ts` -> microseconds, exactly (floats lose the last digits). */
function micros(ts: string): bigint {
  const [sec = "0", frac = ""] = ts.split(".");
  return BigInt(sec) * 1_000_000n + BigInt(frac.padEnd(6, "0").slice(0, 6));
}

/** True when `id` looks like a Slack message ts. */
export function isSlackTs(id: string): boolean {
  return /^\d+\.\d+$/.test(id);
}

/** Orders Slack ts values: -1, 0 or 1. */
export function compareTs(a: string, b: string): number {
  return Math.sign(Number(micros(a) - micros(b)));
}

/** Slack's ts among stored messages, and their order (the SDK's catchUpFromHistory). */
export const slackIds: Pick<MissedMessages, "idOf" | "compare"> = { idOf: (m) => (typeof m.id === "string" && isSlackTs(m.id) ? m.id : undefined), compare: compareTs };
