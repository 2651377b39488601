import type { RawMessage } from "@mom/bus";
import type { ChannelMessage } from "@mom/contracts";
import type { InboundHistory } from "./inbound-history.js";

/**
 * The platform's own message ids among a channel's stored inbound messages, at or before `last`:
 * where mom left off there, read from the bus (the inbound stream is the record of what reached
 * mom). `idOf` picks the id of a message the platform published, and undefined for anything else
 * on the channel's subject (scheduled events), which is stepped back over in windows that double
 * (from `window`), as far as the stream keeps the channel. Resolves with the ids of the first
 * window that has any, oldest first: `last`'s alone when it is one; [] when none is stored.
 */
export async function storedPlatformIds(history: InboundHistory, channelId: string, last: RawMessage, idOf: (m: Partial<ChannelMessage>) => string | undefined, window = 64): Promise<string[]> {
  const own = (m: RawMessage) => {
    try {
      return idOf(JSON.parse(m.text) as Partial<ChannelMessage>);
    } catch {
      return undefined;
    }
  };
  const direct = own(last);
  if (direct) return [direct];
  for (let size = window; ; size *= 2) {
    const from = Math.max(1, last.seq - size);
    const stored = (await history.channelFrom(channelId, from)).filter((m) => m.seq <= last.seq);
    const ids = stored.flatMap((m) => own(m) ?? []);
    if (ids.length) return ids;
    // Read back to the stream's start (what it still keeps of the channel) and found none.
    if (from === 1) return [];
  }
}
