import { describe, expect, it } from "@jest/globals";
import { approvalButtonId, parseApprovalButton } from "./approval-buttons.js";

describe("approval buttons", () => {
  it("round-trips the decision and the approval id, with the default or a platform's prefix", () => {
    expect(approvalButtonId("allow", "a1:b")).toBe("mom:allow:a1:b");
    expect(parseApprovalButton("mom:allow:a1:b")).toEqual({ decision: "allow-once", approvalId: "a1:b" });
    expect(parseApprovalButton(approvalButtonId("deny", "x", "mom-approval:"), "mom-approval:")).toEqual({ decision: "deny", approvalId: "x" });
  });

  it("carries the prompt's channel for a copy shown elsewhere", () => {
    expect(approvalButtonId("allow", "a1:b", "mom:", "15550001")).toBe("mom:allow:a1:b@15550001");
    expect(parseApprovalButton("mom:allow:a1:b@15550001")).toEqual({ decision: "allow-once", approvalId: "a1:b", channel: "15550001" });
    expect(parseApprovalButton("mom:deny:x@")).toBeUndefined();
  });

  it("ignores buttons that are not mom's approvals", () => {
    expect(parseApprovalButton("mom:allow:")).toBeUndefined();
    expect(parseApprovalButton("mom:maybe:x")).toBeUndefined();
    expect(parseApprovalButton("mom-approval:allow:x")).toBeUndefined();
    expect(parseApprovalButton("mom:allow:x", "mom-approval:")).toBeUndefined();
  });
});
