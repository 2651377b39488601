import { describe, expect, it } from "@jest/globals";
import { approvalButtonId, parseApprovalButton } from "./approval-buttons.js";
import { codeBlocks } from "./code-blocks.js";
import { DetailMessages } from "./detail-messages.js";
import { plainDialect } from "./dialect.js";

const fenced = { ...plainDialect(), codeBlock: (t: string) => "```\n" + t + "\n```" };

describe("approval button data", () => {
  it("round-trips a decision; another prefix, another button or a missing id is not one", () => {
    expect(approvalButtonId("allow", "ap-1")).toBe("mom:allow:ap-1");
    expect(parseApprovalButton("mom:allow:ap-1")).toEqual({ decision: "allow-once", approvalId: "ap-1" });
    expect(parseApprovalButton("mom:deny:a:b")).toEqual({ decision: "deny", approvalId: "a:b" });
    expect(parseApprovalButton("mom-approval:allow:ap-1")).toBeUndefined();
    expect(parseApprovalButton("mom:allow:")).toBeUndefined();
    expect(parseApprovalButton("mom:maybe:ap-1")).toBeUndefined();
  });
});

describe("codeBlocks", () => {
  it("keeps short text in one block and cuts long text at line breaks, within the limit, dropping nothing", () => {
    expect(codeBlocks("a\nb", fenced, 100)).toEqual(["```\na\nb\n```"]);
    const lines = Array.from({ length: 40 }, (_, i) => `line ${i}`);
    const blocks = codeBlocks(lines.join("\n"), fenced, 50);
    expect(blocks.length).toBeGreaterThan(1);
    for (const b of blocks) expect(b.length).toBeLessThanOrEqual(50);
    expect(blocks.map((b) => b.slice(4, -4)).join("\n")).toBe(lines.join("\n"));
  });

  it("spreads a line longer than a block over several", () => {
    const blocks = codeBlocks("x".repeat(120), fenced, 50);
    for (const b of blocks) expect(b.length).toBeLessThanOrEqual(50);
    expect(blocks.map((b) => b.slice(4, -4)).join("")).toBe("x".repeat(120));
  });
});

describe("DetailMessages", () => {
  it("gathers details into as few messages as fit, posting new ones and editing grown ones", async () => {
    const calls: string[] = [];
    let n = 0;
    const post = async (text: string) => {
      calls.push(`post ${text}`);
      return `m${++n}`;
    };
    const edit = async (id: string, text: string) => void calls.push(`edit ${id} ${text}`);
    const d = new DetailMessages(12);
    d.add(["aaa", "bbb"]);
    await d.flush(post, edit);
    d.add(["c", "d".repeat(14)]);
    await d.flush(post, edit);
    await d.flush(post, edit);
    expect(calls).toEqual(["post aaa\n\nbbb", "edit m1 aaa\n\nbbb\n\nc", `post ${"d".repeat(11)}…`]);
    expect(d.ids()).toEqual(["m1", "m2"]);
  });
});
