import { describe, expect, it } from "@jest/globals";
import type { RawMessage } from "@mom/bus";
import { pino } from "pino";
import { FailureWatch } from "./failure-watch.js";
import type { InboundHistory } from "./inbound-history.js";
import { storedPlatformIds } from "./stored-ids.js";

const stored = (seq: number, text: string): RawMessage => ({ stream: "MOM_IN", seq, subject: "mom.in.x.C1", time: new Date(), text });
const msg = (seq: number, id: string) => stored(seq, JSON.stringify({ id, channelId: "C1" }));

function history(messages: RawMessage[]): InboundHistory & { reads: number[] } {
  const reads: number[] = [];
  return {
    reads,
    lastOfEachChannel: async () => [],
    lastOf: async () => messages.at(-1),
    channelFrom: async (_ch, fromSeq) => {
      reads.push(fromSeq);
      return messages.filter((m) => m.seq >= fromSeq);
    },
  };
}
const platformId = (m: { id?: unknown }) => (typeof m.id === "string" && m.id.startsWith("p") ? m.id : undefined);

describe("storedPlatformIds", () => {
  it("is the last message's id alone when it is the platform's, without reading", async () => {
    const h = history([msg(3, "p1"), msg(9, "p2")]);
    expect(await storedPlatformIds(h, "C1", msg(9, "p2"), platformId)).toEqual(["p2"]);
    expect(h.reads).toEqual([]);
  });

  it("steps back over other messages (and ones that are no JSON) in windows that double", async () => {
    const msgs = [msg(5, "p1"), msg(6, "p2"), stored(7, "not json")];
    for (let seq = 8; seq < 40; seq++) msgs.push(msg(seq, `sched-${seq}`));
    const h = history(msgs);
    expect(await storedPlatformIds(h, "C1", msgs.at(-1)!, platformId, 8)).toEqual(["p1", "p2"]);
    expect(h.reads).toEqual([31, 23, 7, 1]);
  });

  it("is empty when the stream keeps none of the platform's", async () => {
    const msgs = [msg(1, "sched-a"), msg(2, "sched-b")];
    expect(await storedPlatformIds(history(msgs), "C1", msgs[1]!, platformId)).toEqual([]);
  });
});

describe("FailureWatch", () => {
  it("logs the first failure and the recovery once each, and says since when it fails", () => {
    const lines: string[] = [];
    const log = pino({ level: "info" }, { write: (l: string) => void lines.push((JSON.parse(l) as { msg: string }).msg) });
    const w = new FailureWatch("telegram getUpdates", log);
    expect(w.problem()).toBeUndefined();
    w.failed("502 Bad Gateway");
    w.failed("timeout");
    expect(w.problem()).toMatch(/^Telegram getUpdates failing since \S+: 502 Bad Gateway$/);
    w.works();
    w.works();
    expect(w.problem()).toBeUndefined();
    expect(lines).toEqual(["telegram getUpdates failed (retrying): 502 Bad Gateway", "telegram getUpdates works again"]);
  });
});
