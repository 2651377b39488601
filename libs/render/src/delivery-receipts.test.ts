import { describe, expect, it } from "@jest/globals";
import type { FileSource } from "@mom/bus";
import type { OutboundEvent, OutboundEventBody, Receipt } from "@mom/contracts";
import { pino } from "pino";
import { DeliveryReceipts } from "./delivery-receipts.js";
import { plainDialect } from "./dialect.js";
import { type ChatSurface, MessageLayout } from "./message-layout.js";
import { Presenter } from "./presenter.js";

const USAGE = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

/** A platform that cannot edit (WhatsApp-like), whose posts fail while `refuse` is set. */
function setup() {
  let n = 0;
  const state = { refuse: undefined as string | undefined };
  const surface: ChatSurface = {
    dialect: plainDialect(200),
    async post() {
      if (state.refuse) throw new Error(state.refuse);
      return `msg-${++n}`;
    },
    async upload() {},
    async prompt() {
      return `msg-${++n}`;
    },
    async closePrompt() {},
  };
  const receipts: Array<{ channel: string; r: Receipt }> = [];
  const deliveries = new DeliveryReceipts("wa", async (channel, r) => void receipts.push({ channel, r }), pino({ level: "silent" }));
  const p = new Presenter(new MessageLayout(surface), { files: {} as FileSource, maxBytes: 1000, log: pino({ level: "silent" }), editIntervalMs: 10, deliveries });
  let seq = 0;
  const emit = (runId: string, event: OutboundEventBody) => p.handle("C1", { runId, seq: seq++, ts: new Date().toISOString(), event } as OutboundEvent);
  const end = (runId: string, finalText: string, extra = {}) => emit(runId, { type: "run_ended", stopReason: "stop", finalText, usage: USAGE, durationMs: 5, ...extra });
  return { state, receipts, deliveries, emit, end };
}

describe("delivery receipts (what reached the person)", () => {
  it("records the platform's ids of every message carrying the answer, once per run", async () => {
    const { receipts, end } = setup();
    await end("r1", "a long answer ".repeat(30)); // split over several messages at 200 characters
    expect(receipts).toHaveLength(1);
    const { channel, r } = receipts[0]!;
    expect(channel).toBe("C1");
    expect(r).toMatchObject({ receiptId: "r1:delivery", type: "delivery.succeeded", runId: "r1", toolId: "chat.deliver", toolCallId: "", actor: "ingress-wa" });
    expect(r.detail).toMatch(/^accepted by the platform as msg-1, msg-2, msg-3/);
    expect(r.argsHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("records a refusal with the platform's error, and nothing for a silent run", async () => {
    const { state, receipts, end } = setup();
    state.refuse = "(#131047) Re-engagement message";
    expect(await end("r2", "hello")).toBe(false);
    await end("r3", "", { silent: true });
    expect(receipts.map((x) => [x.r.type, x.r.runId, x.r.detail])).toEqual([["delivery.failed", "r2", "(#131047) Re-engagement message"]]);
  });

  it("records a failure the platform reports later against the run whose message it was", async () => {
    const { receipts, deliveries, end } = setup();
    await end("r4", "sent, then bounced");
    expect(await deliveries.failedLater("msg-1", "131047 Re-engagement message")).toBe(true);
    expect(await deliveries.failedLater("not-ours", "x")).toBe(false);
    expect(receipts.map((x) => [x.r.type, x.r.runId, x.r.receiptId])).toEqual([
      ["delivery.succeeded", "r4", "r4:delivery"],
      ["delivery.failed", "r4", "r4:delivery-failed:msg-1"],
    ]);
  });
});
