import { describe, expect, it } from "@jest/globals";
import type { BusEntry } from "@mom/bus";
import type { OutboundEvent } from "@mom/contracts";
import { LiveState } from "./live-state.js";

const NOW = new Date("2026-03-02T12:00:00Z");
let seq = 0;
const out = (channel: string, runId: string, event: OutboundEvent["event"], time = "2026-03-02T11:00:00.000Z"): BusEntry =>
  ({ kind: "out", stream: "MOM_OUT", seq: ++seq, time, subject: "x", channel, data: { runId, seq, ts: time, event } }) as BusEntry;
const trigger = (messageId: string) => ({ messageId, senderId: "u1", username: "ann", text: "hi" });
const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const asked = { type: "approval_requested" as const, approvalId: "ap1", toolId: "bash", risk: "destructive" as const, argsSummary: "ls", requestedBy: { id: "u1", username: "ann" }, expiresAt: "2026-03-02T12:05:00Z", approvers: ["u1"] };

describe("LiveState", () => {
  it("derives each channel's state from the outbound events: queued, running, waiting for approval, idle", () => {
    const s = new LiveState(() => NOW);
    const state = () => s.snapshot().channels.find((c) => c.channel === "cli/a")!.state;
    s.outbound(out("cli/a", "r1", { type: "run_queued", trigger: trigger("m1"), position: 1 }));
    expect(state()).toBe("queued");
    s.outbound(out("cli/a", "r1", { type: "run_started", trigger: trigger("m1"), model: "fake/m" }));
    expect(state()).toBe("running");
    s.outbound(out("cli/a", "r1", asked));
    expect(state()).toBe("waiting for approval");
    expect(s.approval("ap1")?.channel).toBe("cli/a");
    s.outbound(out("cli/a", "r1", { type: "approval_resolved", approvalId: "ap1", outcome: "approved", decidedBy: "@ann" }));
    expect(state()).toBe("running");
    s.outbound(out("cli/a", "r1", { type: "run_ended", stopReason: "error", errorMessage: "boom", finalText: "", usage, durationMs: 5 }));
    expect(state()).toBe("idle");
    const o = s.snapshot();
    expect([o.runsToday, o.errorsToday]).toEqual([1, 1]);
  });

  it("a run's end clears its approvals; yesterday's runs are not today's; runners own what the records say", () => {
    const s = new LiveState(() => NOW);
    s.outbound(out("cli/b", "old", { type: "run_started", trigger: trigger("m0"), model: "fake/m" }, "2026-03-01T23:59:00.000Z"));
    s.outbound(out("cli/b", "r2", { type: "run_started", trigger: trigger("m2"), model: "fake/m" }));
    s.outbound(out("cli/b", "r2", { ...asked, approvalId: "ap2" }));
    s.outbound(out("cli/b", "r2", { type: "run_ended", stopReason: "aborted", finalText: "", usage, durationMs: 5 }));
    expect(s.approval("ap2")).toBeUndefined();
    expect(s.snapshot().runsToday).toBe(1);
    s.heartbeat("runner-1", { id: "runner-1", channels: 1, startedAt: "2026-03-02T10:00:00Z" }, "2026-03-02T11:59:59Z");
    s.channelRecord("cli/b", { owner: "runner-1", doneSeq: 3, streamCreated: "2026-03-01T00:00:00Z" });
    expect(s.snapshot().runners).toEqual([expect.objectContaining({ id: "runner-1", owns: ["cli/b"], leaving: false })]);
    s.expireRunners(500); // its heartbeat is older than the bucket's TTL: gone without a delete on the watch
    expect(s.snapshot().runners).toEqual([]);
  });
});
