import { describe, expect, it } from "@jest/globals";
import type { Bus } from "@mom/bus";
import type { Receipt, ReceiptType } from "@mom/contracts";
import type { ChannelStore } from "@mom/store";
import { pino } from "pino";
import { ActiveRun, type RunInProgress } from "./active-run.js";
import { ApprovalBroker } from "./approval-broker.js";
import type { RunPublisher } from "./run-publisher.js";
import { ChannelToolGate } from "./tool-gate.js";

const ref = { adapter: "cli", channelId: "c1" };

/**
 * The gate with the real approval broker; its outer edges (receipts.jsonl and the bus) are kept
 * in memory, and the receipt named `pauseAt` waits to be written until the test lets it.
 */
function setup(o: { ask?: string[]; pauseAt: ReceiptType }) {
  const receipts: Receipt[] = [];
  let paused!: () => void;
  const reached = new Promise<void>((r) => (paused = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const store = {
    appendReceipt: async (r: Receipt) => {
      if (r.type === o.pauseAt) {
        paused();
        await released;
      }
      receipts.push(r);
    },
  } as unknown as ChannelStore;
  const bus = { publish: async () => {}, subjects: { channel: () => "mom.receipts.cli.c1" } } as unknown as Bus;
  const broker = new ApprovalBroker();
  const active = new ActiveRun();
  const emitted: { type: string; approvalId?: string }[] = [];
  const run: RunInProgress = {
    runId: "run-1",
    message: { id: "m1", sender: { id: "U1", username: "ann" } } as RunInProgress["message"],
    publisher: { emit: (e: { type: string }) => emitted.push(e) } as unknown as RunPublisher,
    receipts: [],
  };
  active.current = run;
  const gate = new ChannelToolGate({
    bus,
    ref,
    channel: "cli/c1",
    store,
    broker,
    policy: () => ({ layers: [], ...(o.ask && { ask: o.ask }) }),
    approvers: () => ["U1"],
    approvalTimeoutMs: 60_000,
    active,
    log: pino({ level: "silent" }),
  });
  return { gate, broker, receipts, emitted, reached, release };
}

describe("ChannelToolGate and a stop", () => {
  it("a stop that lands while the call's start is being recorded: the tool is never called, and its receipt says it failed", async () => {
    const { gate, receipts, reached, release } = setup({ pauseAt: "tool.call.started" });
    const stop = new AbortController();
    let called = false;
    const call = gate.run({ toolCallId: "t1", toolId: "process", risk: "destructive", args: { action: "start", command: "make deploy" } }, stop.signal, async () => {
      // e.g. a background job's start, or a host tool that does not look at its signal.
      called = true;
      return "started";
    });
    await reached;
    stop.abort();
    release();
    await expect(call).rejects.toThrow("aborted");
    expect(called).toBe(false);
    expect(receipts.map((r) => r.type)).toEqual(["tool.call.requested", "tool.call.started", "tool.call.failed"]);
  });

  it("approved, then stopped while the approval is being recorded: the tool is never called", async () => {
    const { gate, broker, receipts, emitted, reached, release } = setup({ ask: ["process"], pauseAt: "tool.call.approved" });
    const stop = new AbortController();
    let called = false;
    const call = gate.run({ toolCallId: "t1", toolId: "process", risk: "destructive", args: { action: "start", command: "make deploy" } }, stop.signal, async () => {
      called = true;
      return "started";
    });
    const approvalId = await (async () => {
      for (;;) {
        const asked = emitted.find((e) => e.type === "approval_requested");
        if (asked) return asked.approvalId!;
        await new Promise((r) => setImmediate(r));
      }
    })();
    expect(broker.decide("cli/c1", { type: "approval_decision", approvalId, decision: "allow-once", decidedBy: { id: "U1", username: "ann" } } as never)).toMatchObject({ status: "resolved" });
    await reached;
    stop.abort();
    release();
    await expect(call).rejects.toThrow("aborted");
    expect(called).toBe(false);
    expect(receipts.map((r) => r.type)).toContain("tool.call.failed");
  });
});
