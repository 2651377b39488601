import { describe, expect, it } from "@jest/globals";
import type { InboundHistory, RawMessage } from "@mom/ingress-sdk";
import { lastMailOf } from "./email-history.js";

const stored = (seq: number, id: string, isBot = false): RawMessage => ({
  stream: "MOM_IN",
  seq,
  subject: "mom.in.email.c1",
  time: new Date(),
  text: JSON.stringify({ id, channelId: "c1", sender: { id: isBot ? "scheduler" : "ana@example.org", username: "x", isBot } }),
});

/** One thread's subject of the inbound stream, as the stream keeps it (from `firstSeq` on). */
function history(messages: RawMessage[], firstSeq = 1): InboundHistory & { reads: number[] } {
  const reads: number[] = [];
  return {
    reads,
    lastOfEachChannel: async () => [{ channelId: "c1", last: messages.at(-1)! }],
    lastOf: async () => messages.at(-1),
    channelFrom: async (_ch, fromSeq) => {
      reads.push(fromSeq);
      return messages.filter((m) => m.seq >= Math.max(fromSeq, firstSeq));
    },
  };
}

describe("lastMailOf (what an answer naming no mail replies to, read from the inbound stream)", () => {
  it("the thread's newest mail, without reading further when it is the last message", async () => {
    const h = history([stored(3, "first@example.org"), stored(9, "second@example.org")]);
    expect(await lastMailOf(h, "c1")).toBe("second@example.org");
    expect(h.reads).toEqual([]);
  });

  it("steps back over scheduled events, in widening windows", async () => {
    const events = Array.from({ length: 40 }, (_, i) => stored(100 + i, `e${i}.json@2026-01-01T00:00:00.000Z`, true));
    const h = history([stored(50, "asked@example.org"), ...events]);
    expect(await lastMailOf(h, "c1")).toBe("asked@example.org");
    expect(h.reads).toEqual([123, 107, 75, 11]);
  });

  it("undefined for a thread with no mail stored (only events, or nothing)", async () => {
    expect(await lastMailOf(history([stored(5, "e.json@x", true)]), "c1")).toBeUndefined();
    expect(await lastMailOf(history([]), "c1")).toBeUndefined();
  });
});
