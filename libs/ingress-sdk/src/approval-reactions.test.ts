import { describe, expect, it } from "@jest/globals";
import type { ApprovalClick } from "@mom/render";
import { ApprovalReactions } from "./approval-reactions.js";

const ana = { id: "u-ana", username: "ana" };

/** An inbound port that records the decisions and refuses everyone but `approver`. */
function inbound(approver = "u-ana") {
  const clicks: ApprovalClick[] = [];
  return { clicks, decide: async (click: ApprovalClick) => (clicks.push(click), click.user.id === approver ? {} : { refusal: "Only @ana can decide this." }) };
}

describe("ApprovalReactions", () => {
  it("✅ 👍 ✔ allow once, ❌ 👎 ✖ deny, with or without variation selectors and skin tones; others decide nothing", () => {
    const { decisionOf } = ApprovalReactions;
    expect(["✅", "✅️", "👍", "👍🏽", "✔️", " ✔ "].map(decisionOf)).toEqual(Array(6).fill("allow-once"));
    expect(["❌", "👎", "👎🏿", "✖️"].map(decisionOf)).toEqual(Array(4).fill("deny"));
    expect(["🎉", "ok", "", "✅✅"].map(decisionOf)).toEqual([undefined, undefined, undefined, undefined]);
    expect([ApprovalReactions.allow, ApprovalReactions.deny].map(decisionOf)).toEqual(["allow-once", "deny"]);
    expect(ApprovalReactions.howTo).toBe(`React with ${ApprovalReactions.allow} to allow once or ${ApprovalReactions.deny} to deny.`);
  });

  it("a reaction on a posted prompt decides it; a refusal comes back with the prompt's thread; closing gives the bot's reactions back", async () => {
    const approvals = new ApprovalReactions();
    const port = inbound();
    approvals.posted("$p", "a1", "$root").push("$r1", "$r2");
    const recall = async () => {
      throw new Error("a prompt of this process is not recalled");
    };
    expect(await approvals.decide(port, { promptId: "$p", key: "👍", channel: "!room", user: ana }, recall)).toEqual({ thread: "$root" });
    expect(await approvals.decide(port, { promptId: "$p", key: "❌", channel: "!room", user: { id: "u-bob", username: "bob" } }, recall)).toEqual({ refusal: "Only @ana can decide this.", thread: "$root" });
    expect(port.clicks).toEqual([
      { approvalId: "a1", decision: "allow-once", user: ana, channel: "!room" },
      { approvalId: "a1", decision: "deny", user: { id: "u-bob", username: "bob" }, channel: "!room" },
    ]);
    expect(approvals.closed("$p")).toEqual(["$r1", "$r2"]);
    expect(approvals.closed("$p")).toEqual([]);
  });

  it("a prompt of before a restart is recalled once; other reactions and other messages decide nothing", async () => {
    const approvals = new ApprovalReactions();
    const port = inbound();
    const recalls: string[] = [];
    const recall = (promptId: string) => async () => (recalls.push(promptId), promptId === "$old" ? { approvalId: "a0", text: "🔐 Approval needed" } : undefined);
    expect(await approvals.decide(port, { promptId: "$old", key: "🎉", channel: "!room", user: ana }, recall("$old"))).toBeUndefined();
    expect(recalls).toEqual([]); // no decision, nothing asked of the platform
    expect(await approvals.decide(port, { promptId: "$old", key: "✅", channel: "!room", user: ana }, recall("$old"))).toEqual({});
    expect(await approvals.decide(port, { promptId: "$old", key: "✅", channel: "!room", user: ana }, recall("$old"))).toEqual({});
    expect(await approvals.decide(port, { promptId: "$chat", key: "✅", channel: "!room", user: ana }, recall("$chat"))).toBeUndefined();
    expect(await approvals.decide(port, { promptId: "$chat", key: "❌", channel: "!room", user: ana }, recall("$chat"))).toBeUndefined();
    expect(recalls).toEqual(["$old", "$chat"]);
    expect(port.clicks.map((c) => c.approvalId)).toEqual(["a0", "a0"]);
    // The recalled prompt goes with the decision (where it is, what it read), to be edited with the outcome; a prompt of this process does not.
    expect(port.clicks[0]!.prompt).toEqual({ ref: "$old", text: "🔐 Approval needed" });
    approvals.posted("$new", "a1");
    await approvals.decide(port, { promptId: "$new", key: "✅", channel: "!room", user: ana }, recall("$new"));
    expect(port.clicks.at(-1)!.prompt).toBeUndefined();
  });
});
