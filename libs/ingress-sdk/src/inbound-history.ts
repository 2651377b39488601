import { type Bus, lastPerSubject, type RawMessage, readRange } from "@mom/bus";

/**
 * This adapter's own messages on the inbound stream, as stored: the record of what reached mom,
 * where a platform with history (Slack's conversations.history) starts catching up from. Only the
 * adapter's own subjects are read (its NATS user may read nothing else of the stream).
 */
export interface InboundHistory {
  /** The newest inbound message of every channel of this adapter. */
  lastOfEachChannel(): Promise<Array<{ channelId: string; last: RawMessage }>>;
  /** The newest inbound message of one channel, if the stream keeps any. */
  lastOf(channelId: string): Promise<RawMessage | undefined>;
  /** A channel's inbound messages stored from sequence `fromSeq` on (oldest first). */
  channelFrom(channelId: string, fromSeq: number): Promise<RawMessage[]>;
}

export function inboundHistory(bus: Bus, adapter: string): InboundHistory {
  const stream = bus.subjects.stream("IN");
  return {
    lastOfEachChannel: async () =>
      (await lastPerSubject(bus, stream, bus.subjects.wildcard("in", adapter))).flatMap((last) => {
        const ref = bus.subjects.parse(last.subject);
        return ref && ref.adapter === adapter ? [{ channelId: ref.channelId, last }] : [];
      }),
    lastOf: async (channelId) => (await lastPerSubject(bus, stream, bus.subjects.channel("in", { adapter, channelId })))[0],
    channelFrom: (channelId, fromSeq) => readRange(bus, stream, bus.subjects.channel("in", { adapter, channelId }), { seq: fromSeq }),
  };
}
