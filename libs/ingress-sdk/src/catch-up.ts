import type { RawMessage } from "@mom/bus";
import type { ChannelMessage } from "@mom/contracts";
import type { InboundHistory } from "./inbound-history.js";
import type { PlatformContext, PlatformMessage } from "./platform.js";
import { storedPlatformIds } from "./stored-ids.js";

/** What a platform with a history of its chats supplies to catch them up (Slack's conversations.history). */
export interface MissedMessages {
  /** The platform's id of a stored message it published; undefined for anything else on the chat's subject (scheduled events). */
  idOf(m: Partial<ChannelMessage>): string | undefined;
  /** Orders two of the platform's ids: negative when `a` is older. */
  compare(a: string, b: string): number;
  /** The chat's messages newer than `after`, oldest first, as messages to mom (undefined: not one). */
  after(chat: string, after: string): Promise<Array<PlatformMessage | undefined>>;
  /** A missed mention younger than this is still answered; older ones are only logged (default 10 minutes). */
  answerWindowMs?: number;
}

/** Where mom left off in a chat: the newest of the platform's ids among its stored messages (`storedPlatformIds`). */
export async function newestStoredId(history: InboundHistory, chat: string, last: RawMessage, source: Pick<MissedMessages, "idOf" | "compare">): Promise<string | undefined> {
  const ids = await storedPlatformIds(history, chat, last, source.idOf);
  return ids.reduce<string | undefined>((newest, id) => (!newest || source.compare(id, newest) > 0 ? id : newest), undefined);
}

/**
 * Catches every chat of the adapter that mom has heard from (its messages on the inbound stream)
 * up on what was said there while the ingress was away, from the newest message mom has of it,
 * ahead of what arrives live there (`inbound.catchUp`). Each missed message is published as any
 * other, with `metadata.backfilled`; a missed mention is answered only while it is fresh, and a
 * refused direct message is not answered again. Resolves once every chat's catching-up is under
 * way; what fails is logged, and a stream that cannot be read turns catching up off.
 */
export async function catchUpFromHistory(ctx: Pick<PlatformContext<unknown>, "history" | "inbound" | "log">, source: MissedMessages): Promise<void> {
  const { history, inbound, log } = ctx;
  let chats;
  try {
    chats = await history.lastOfEachChannel();
  } catch (err) {
    log.error({ err }, `backfill is off: cannot read this adapter's messages on the inbound stream: ${(err as Error).message}`);
    return;
  }
  const window = source.answerWindowMs ?? 10 * 60_000;
  for (const { channelId, last } of chats) {
    let after: string | undefined;
    const missed = async () => {
      after = await newestStoredId(history, channelId, last, source);
      if (!after) return [];
      return (await source.after(channelId, after)).flatMap((m) => {
        if (!m) return [];
        const fresh = Date.now() - Date.parse(m.timestamp) <= window;
        return [{ ...m, isMention: m.isMention && fresh, metadata: { ...m.metadata, backfilled: true }, refuse: async () => {} }];
      });
    };
    void inbound.catchUp(channelId, missed).then(
      (count) => count && log.info({ channel: channelId, count, after }, "backfilled messages missed while offline"),
      (err: unknown) => log.warn({ err, channel: channelId }, "backfill failed"),
    );
  }
}
