import { describe, expect, it } from "@jest/globals";
import type { RawMessage } from "@mom/ingress-sdk";
import { type InboundHistory, newestStoredId } from "@mom/ingress-sdk";
import { slackIds } from "./slack-inbound.js";

const lastPublishedTs = (h: InboundHistory, channel: string, last: RawMessage) => newestStoredId(h, channel, last, slackIds);

const stored = (seq: number, id: string): RawMessage => ({ stream: "MOM_IN", seq, subject: "mom.in.slack.C1", time: new Date(), text: JSON.stringify({ id, channelId: "C1" }) });

/** One channel's subject of the inbound stream, as the stream keeps it (from `firstSeq` on). */
function history(messages: RawMessage[], firstSeq = 1): InboundHistory & { reads: number[] } {
  const reads: number[] = [];
  return {
    reads,
    lastOfEachChannel: async () => [{ channelId: "C1", last: messages.at(-1)! }],
    lastOf: async () => messages.at(-1),
    channelFrom: async (_ch, fromSeq) => {
      reads.push(fromSeq);
      return messages.filter((m) => m.seq >= Math.max(fromSeq, firstSeq));
    },
  };
}

describe("lastPublishedTs (where backfill starts, read from the inbound stream)", () => {
  it("is the last message's Slack ts when the last message is a Slack message, without reading further", async () => {
    const h = history([stored(3, "1732184400.000100"), stored(9, "1732184500.000200")]);
    expect(await lastPublishedTs(h, "C1", stored(9, "1732184500.000200"))).toBe("1732184500.000200");
    expect(h.reads).toEqual([]);
  });

  it("steps back over scheduled events (windows that double) to the newest Slack message", async () => {
    const msgs = [stored(10, "1732184400.000100"), stored(20, "1732184300.000000")];
    for (let seq = 30; seq < 230; seq++) msgs.push(stored(seq, `sched-${seq}`));
    const h = history(msgs);
    expect(await lastPublishedTs(h, "C1", msgs.at(-1)!)).toBe("1732184400.000100");
    expect(h.reads).toEqual([229 - 64, 229 - 128, 1]);
  });

  it("is undefined when the stream keeps no Slack message of the channel (retention took them)", async () => {
    const msgs = [stored(500, "sched-a"), stored(900, "sched-b")];
    const h = history(msgs, 400);
    expect(await lastPublishedTs(h, "C1", msgs.at(-1)!)).toBeUndefined();
    expect(h.reads.at(-1)).toBe(1);
  });
});
