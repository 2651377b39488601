import type { LogEntry } from "@mom/contracts";
import type { WebClient } from "@slack/web-api";
import type { Logger } from "pino";
import { compareTs, isSlackTs, type SlackMessageEvent } from "./slack-inbound.js";

export interface BackfillDeps {
  client: WebClient;
  /** The channel's log (ChannelStore): where mom left off. */
  store: { readLog(): Promise<{ entries: LogEntry[] }> };
  channel: string;
  log: Logger;
  /** Hands one missed message on, oldest first. */
  handle: (ev: SlackMessageEvent) => Promise<void>;
  /** At most this many history pages (default 20). */
  maxPages?: number;
}

/** The newest Slack message id in a channel's log (mom's own answers are `<runId>:reply`). */
export function lastLoggedTs(entries: LogEntry[]): string | undefined {
  let last: string | undefined;
  for (const e of entries) if (isSlackTs(e.id) && (!last || compareTs(e.id, last) > 0)) last = e.id;
  return last;
}

/**
 * Hands on the channel's top-level messages newer than the newest one in its log
 * (conversations.history, oldest first). They keep their ts as id, so the runner's log and the
 * bus's duplicate window drop any it already has. Thread replies posted meanwhile are not fetched.
 * Returns how many messages were handed on.
 */
export async function backfillChannel(deps: BackfillDeps): Promise<number> {
  const { entries } = await deps.store.readLog();
  const oldest = lastLoggedTs(entries);
  if (!oldest) return 0;
  const missed: SlackMessageEvent[] = [];
  let pages = 0;
  for await (const page of deps.client.paginate("conversations.history", { channel: deps.channel, oldest, inclusive: false, limit: 200 })) {
    for (const m of ((page as { messages?: Array<Omit<SlackMessageEvent, "channel">> }).messages ?? [])) {
      if (compareTs(m.ts, oldest) > 0) missed.push({ ...m, channel: deps.channel });
    }
    if (++pages >= (deps.maxPages ?? 20)) {
      deps.log.warn({ channel: deps.channel, pages }, "backfill stopped at its page limit; older missed messages are skipped");
      break;
    }
  }
  missed.sort((a, b) => compareTs(a.ts, b.ts));
  for (const m of missed) await deps.handle(m);
  if (missed.length) deps.log.info({ channel: deps.channel, count: missed.length, after: oldest }, "backfilled messages missed while offline");
  return missed.length;
}
