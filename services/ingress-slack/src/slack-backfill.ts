import type { InboundHistory, RawMessage } from "@mom/ingress-sdk";
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import { compareTs, isSlackTs, type SlackMessageEvent } from "./slack-inbound.js";

/** What backfill reads of the inbound stream (the shell's `ctx.history`): only this adapter's own subjects. */
export type { InboundHistory };

export interface BackfillDeps {
  client: WebClient;
  channel: string;
  /** The newest Slack message this ingress published for the channel (see lastPublishedTs). */
  after: string;
  log: Logger;
  /** At most this many history pages (default 20). */
  maxPages?: number;
}

/** The Slack ts a stored inbound message carries as its id, if it is a Slack message (not a scheduler event). */
function slackIdOf(m: RawMessage): string | undefined {
  try {
    const id = (JSON.parse(m.text) as { id?: unknown }).id;
    return typeof id === "string" && isSlackTs(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Where mom left off in a channel, read from the bus (the inbound stream is the record of what
 * reached mom; no other service's disk is read): the newest Slack message published there. Other
 * messages on the channel's subject (scheduled events) are stepped back over, in windows that
 * double, as far as the stream keeps history. Undefined when no Slack message of it is stored.
 */
export async function lastPublishedTs(history: InboundHistory, channelId: string, last: RawMessage): Promise<string | undefined> {
  const direct = slackIdOf(last);
  if (direct) return direct;
  for (let window = 64; ; window *= 2) {
    const from = Math.max(1, last.seq - window);
    const stored = (await history.channelFrom(channelId, from)).filter((m) => m.seq <= last.seq);
    let newest: string | undefined;
    for (const m of stored) {
      const ts = slackIdOf(m);
      if (ts && (!newest || compareTs(ts, newest) > 0)) newest = ts;
    }
    if (newest) return newest;
    // Read back to the stream's start (what it still keeps of the channel, the server filters) and found none.
    if (from === 1) return undefined;
  }
}

/**
 * The channel's top-level messages newer than `after` (conversations.history), oldest first. They
 * keep their ts as id, so the runner's log and the bus's duplicate window drop any it already
 * has. Thread replies posted meanwhile are not fetched.
 */
export async function missedMessages(deps: BackfillDeps): Promise<SlackMessageEvent[]> {
  const missed: SlackMessageEvent[] = [];
  let pages = 0;
  for await (const page of deps.client.paginate("conversations.history", { channel: deps.channel, oldest: deps.after, inclusive: false, limit: 200 })) {
    for (const m of ((page as { messages?: Array<Omit<SlackMessageEvent, "channel">> }).messages ?? [])) {
      if (compareTs(m.ts, deps.after) > 0) missed.push({ ...m, channel: deps.channel });
    }
    if (++pages >= (deps.maxPages ?? 20)) {
      deps.log.warn({ channel: deps.channel, pages }, "backfill stopped at its page limit; older missed messages are skipped");
      break;
    }
  }
  return missed.sort((a, b) => compareTs(a.ts, b.ts));
}
