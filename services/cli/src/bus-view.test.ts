import { describe, expect, it } from "@jest/globals";
import { createSubjects } from "@mom/contracts";
import { formatEntry, interleave, toEntry } from "./bus-view.js";

const s = createSubjects("mom");
let seq = 0;
const raw = (subject: string, payload: unknown, time = "2026-11-23T10:00:00.000Z") => ({
  stream: `MOM_${subject.split(".")[1]!.toUpperCase()}`,
  seq: ++seq,
  subject,
  time: new Date(time),
  text: typeof payload === "string" ? payload : JSON.stringify(payload),
});
const show = (subject: string, payload: unknown) => formatEntry(toEntry(raw(subject, payload), s));
const out = (event: object) => show("mom.out.slack-acme.C1", { runId: "5d0c1a2b-aaaa", seq: 1, ts: "2026-11-23T10:00:00.000Z", event });

describe("the bus view shared by mom replay and mom tail", () => {
  it("says who said what", () => {
    const message = { id: "m1", channelId: "C1", timestamp: "2026-11-23T10:00:00.000Z", sender: { id: "U1", username: "ana", isBot: false }, text: "deploy it", attachments: [{ filename: "plan.md", localPath: "" }], isMention: true };
    expect(show("mom.in.slack-acme.C1", message)).toBe("10:00:00  ana → mom: deploy it [📎 plan.md]");
    expect(show("mom.in.slack-acme.C1", { ...message, isMention: false, sender: { id: "B1", username: "ci", isBot: true } })).toBe("10:00:00  ci (bot): deploy it [📎 plan.md]");
  });

  it("shows approvals, their outcome, stops and the decisions on mom.ctl", () => {
    expect(out({ type: "approval_requested", approvalId: "ap1", toolId: "bash", risk: "destructive", argsSummary: "rm -rf build", requestedBy: { id: "U1", username: "ana" }, expiresAt: "2026-11-23T10:05:00.000Z", approvers: ["U2"] })).toBe(
      "10:00:00      ⏸ approval ap1 asked: bash [destructive] rm -rf build (for ana; approvers U2)",
    );
    expect(out({ type: "approval_resolved", approvalId: "ap1", outcome: "denied", decidedBy: "bob" })).toMatch(/^10:00:00 {6}⊘ Denied by bob\. \(approval ap1\)$/);
    expect(show("mom.ctl.slack-acme.C1", { type: "approval_decision", ts: "2026-11-23T10:00:00.000Z", approvalId: "ap1", decision: "deny", decidedBy: { id: "U2", username: "bob" } })).toBe("10:00:00  ✗ bob denied approval ap1");
    expect(show("mom.ctl.slack-acme.C1", { type: "abort", ts: "2026-11-23T10:00:00.000Z", requestedBy: { id: "U1", username: "ana" } })).toBe("10:00:00  ■ stop requested by ana");
  });

  it("shows a run's end with its answer, errors and usage, and leaves out deltas", () => {
    const usage = { input: 1200, output: 34, cacheRead: 0, cacheWrite: 0, totalTokens: 1234, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.0041 } };
    expect(out({ type: "run_ended", stopReason: "error", errorMessage: "429 rate limited", finalText: "", usage, durationMs: 2300 })).toBe(
      ["10:00:00      ✗ Error: 429 rate limited", "            run 5d0c1a2b ended (error): 1,200 in · 34 out · $0.0041 · 2.3s"].join("\n"),
    );
    expect(out({ type: "run_ended", stopReason: "stop", finalText: "line one\nline two", usage, durationMs: 10 })).toMatch(/^10:00:00  mom: line one\n {15}line two\n/);
    expect(out({ type: "message_update", assistantMessageEvent: { type: "text_delta", delta: "li" } })).toBeUndefined();
  });

  it("shows whether each answer reached the person (delivery receipts)", () => {
    const receipt = { receiptId: "5d0c1a2b-aaaa:delivery", type: "delivery.succeeded", runId: "5d0c1a2b-aaaa", toolCallId: "", toolId: "chat.deliver", risk: "write", ts: "2026-11-23T10:00:00.000Z", argsHash: "0".repeat(64), detail: "accepted by the platform as 1700.0001", actor: "ingress-slack-acme" };
    expect(show("mom.receipts.slack-acme.C1", receipt)).toBe("10:00:00    ✓ run 5d0c1a2b's answer delivered (ingress-slack-acme: accepted by the platform as 1700.0001)");
    expect(show("mom.receipts.slack-acme.C1", { ...receipt, receiptId: "x:delivery-failed", type: "delivery.failed", detail: "channel_not_found\nmore" })).toBe(
      "10:00:00    ✗ run 5d0c1a2b's answer NOT delivered (ingress-slack-acme): channel_not_found",
    );
  });

  it("shows dead letters and payloads that break their contract", () => {
    expect(show("mom.dlq.agent-runner", { stage: "agent-runner", subject: "mom.in.cli.local", reason: "/text: expected string", payload: "{}", payloadEncoding: "utf8", rejectedAt: "2026-11-23T10:00:00.000Z" })).toBe(
      "10:00:00  ✗ dead letter from agent-runner (mom.in.cli.local): /text: expected string",
    );
    expect(show("mom.in.cli.local", "not json")).toMatch(/^10:00:00  \? MOM_IN #\d+: invalid payload \(/);
  });

  it("interleaves streams by the time each message was stored", () => {
    const a = toEntry(raw("mom.ctl.cli.local", { type: "abort", ts: "2026-11-23T10:00:02.000Z" }, "2026-11-23T10:00:02.000Z"), s);
    const b = toEntry(raw("mom.ctl.cli.local", { type: "abort", ts: "2026-11-23T10:00:01.000Z" }, "2026-11-23T10:00:01.000Z"), s);
    const c = toEntry(raw("mom.ctl.cli.local", { type: "abort", ts: "2026-11-23T10:00:03.000Z" }, "2026-11-23T10:00:03.000Z"), s);
    expect(interleave([[b, c], [a]]).map((e) => e.time)).toEqual([b.time, a.time, c.time]);
  });
});
