import { describe, expect, it } from "@jest/globals";
import type { Receipt } from "@mom/contracts";
import { argsHash, formatActivity, makeReceipt, relevantActivity } from "./receipts.js";

const call = (toolCallId: string, toolId: string, risk: Receipt["risk"]) => ({ runId: "r", toolCallId, toolId, risk, args: { x: 1 } });

describe("receipts", () => {
  it("hashes arguments canonically", () => {
    expect(argsHash({ a: 1, b: [1, { d: 2, c: 3 }] })).toBe(argsHash({ b: [1, { c: 3, d: 2 }], a: 1 }));
    expect(argsHash({ a: 1 })).not.toBe(argsHash({ a: 2 }));
  });

  it("derives the relevant activity: failures, denials, pending, writes, and a few reads", () => {
    const receipts: Receipt[] = [];
    const add = (type: Receipt["type"], c: ReturnType<typeof call>, detail?: string) => receipts.push(makeReceipt(type, c, { detail }));
    for (let i = 0; i < 8; i++) {
      const c = call(`read-${i}`, "read", "read");
      add("tool.call.requested", c);
      add("tool.call.started", c);
      add("tool.call.succeeded", c);
    }
    const w = call("w", "write", "write");
    add("tool.call.requested", w);
    add("tool.call.started", w);
    add("tool.call.succeeded", w);
    const f = call("f", "read", "read");
    add("tool.call.requested", f);
    add("tool.call.started", f);
    add("tool.call.failed", f, "ENOENT");
    const d = call("d", "github.repo.delete", "destructive");
    add("tool.call.requested", d);
    add("tool.call.denied", d, "denied by channel policy");
    const p = call("p", "notes.todo.wipe", "destructive");
    add("tool.call.requested", p);
    const activity = relevantActivity(receipts, new Map([["w", "Write the report"]]));
    expect(activity.filter((a) => a.toolId === "read" && a.status === "succeeded")).toHaveLength(5);
    expect(activity.find((a) => a.toolCallId === "w")).toMatchObject({ status: "succeeded", label: "Write the report" });
    expect(activity.find((a) => a.toolCallId === "f")).toMatchObject({ status: "failed", detail: "ENOENT" });
    expect(activity.find((a) => a.toolCallId === "d")).toMatchObject({ status: "denied" });
    expect(activity.find((a) => a.toolCallId === "p")).toMatchObject({ status: "pending" });
    expect(formatActivity(activity)).toContain("⊘ github.repo.delete [destructive, denied]: denied by channel policy");
  });
});
