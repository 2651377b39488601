import type { ChannelMessage, InboundHistory, RawMessage } from "@mom/ingress-sdk";

/** The Message-ID a stored inbound message carries as its id, if a person's mail published it (not a scheduled event). */
function mailIdOf(m: RawMessage): string | undefined {
  try {
    const c = JSON.parse(m.text) as Partial<ChannelMessage>;
    return typeof c.id === "string" && c.sender?.isBot === false ? c.id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The Message-ID of the newest mail of a thread that reached mom, read from the inbound stream
 * (the shell's `ctx.history`, the record of what reached mom): what an answer naming no mail of
 * its own replies to when this process knows none of the thread — it was restarted in the middle
 * of the run, or the run answers a scheduled event. Events on the thread's subject are stepped
 * back over, in windows that double, as far as the stream keeps it.
 */
export async function lastMailOf(history: InboundHistory, channel: string): Promise<string | undefined> {
  const last = await history.lastOf(channel);
  if (!last) return undefined;
  const direct = mailIdOf(last);
  if (direct) return direct;
  for (let window = 16; ; window *= 2) {
    const from = Math.max(1, last.seq - window);
    const stored = (await history.channelFrom(channel, from)).filter((m) => m.seq <= last.seq);
    const newest = stored.map(mailIdOf).findLast((id) => id !== undefined);
    if (newest) return newest;
    if (from === 1) return undefined;
  }
}
