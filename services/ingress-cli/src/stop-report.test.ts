import { describe, expect, it, jest } from "@jest/globals";
import { type OutboundEvent, type OutboundEventBody, plainDialect } from "@mom/ingress-sdk";
import { StopReport } from "./stop-report.js";

const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const trigger = (text: string) => ({ messageId: "m", senderId: "u", username: "ana", text });
const event = (runId: string, event: OutboundEventBody): OutboundEvent => ({ runId, seq: 0, ts: new Date().toISOString(), event }) as OutboundEvent;
const aborted = (errorMessage?: string): OutboundEventBody => ({ type: "run_ended", stopReason: "aborted", ...(errorMessage && { errorMessage }), finalText: "", usage, durationMs: 5 });

describe("StopReport", () => {
  it("says what a stop did once the run it aborted and the messages it cancelled have ended, after their ends", async () => {
    const said: string[] = [];
    const report = new StopReport(plainDialect(), (line) => said.push(line));
    report.seen(event("r1", { type: "run_started", trigger: trigger("slow one"), model: "fake/x" }));
    report.seen(event("r2", { type: "run_queued", trigger: trigger("queued\n  two"), position: 1 }));
    report.seen(event("r3", { type: "run_queued", trigger: trigger("queued three"), position: 2 }));
    report.sent();
    report.sent(); // a second stop before the first is told adds no second report
    expect(report.seen(event("r1", aborted()))).toBeUndefined();
    expect(report.seen(event("r2", aborted("cancelled by @ana before it started")))).toBe("■ cancelled before it started: “queued two” (cancelled by @ana)");
    expect(said).toEqual([]);
    report.seen(event("r3", aborted("cancelled by @ana before it started")));
    expect(said).toEqual([]); // told after the surface drew this last end
    await Promise.resolve();
    expect(said).toEqual(["stop: aborted the run; 2 queued messages cancelled"]);
  });

  it("tells a stop that found nothing after a moment, and nothing once closed", () => {
    jest.useFakeTimers();
    try {
      const said: string[] = [];
      const report = new StopReport(plainDialect(), (line) => said.push(line));
      report.sent();
      jest.advanceTimersByTime(3_000);
      expect(said).toEqual(["stop: no run was running; nothing was queued"]);
      report.seen(event("r1", { type: "run_started", trigger: trigger("hi"), model: "fake/x" }));
      report.sent();
      report.close();
      jest.advanceTimersByTime(15_000);
      expect(said).toHaveLength(1);
      // a run that ends normally is not the stop's: the report waits for the one it aborts
      report.seen(event("r2", { type: "run_started", trigger: trigger("again"), model: "fake/x" }));
      report.sent();
      report.seen(event("r2", { type: "run_ended", stopReason: "stop", finalText: "done", usage, durationMs: 5 }));
      jest.advanceTimersByTime(0);
      expect(said).toHaveLength(1);
    } finally {
      jest.useRealTimers();
    }
  });
});
