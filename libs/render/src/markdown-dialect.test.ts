import { describe, expect, it } from "@jest/globals";
import { ApprovalCodes } from "./approval-codes.js";
import { markdownDialect, markdownToHtml } from "./markdown-dialect.js";

describe("markdownDialect / markdownToHtml", () => {
  it("writes Markdown: escaped text, code spans that hold backticks, fences nothing inside can close", () => {
    const d = markdownDialect({ limit: 100, promptLimit: 80, mention: (id) => `<${id}>` });
    expect([d.limit, d.promptLimit, d.mention("u1")]).toEqual([100, 80, "<u1>"]);
    expect(d.escape("*a* _b_")).toBe("\\*a\\* \\_b\\_");
    expect([d.bold("x"), d.italic("x"), d.code("a`b"), d.code("ab")]).toEqual(["**x**", "_x_", "`` a`b ``", "`ab`"]);
    expect(d.codeBlock("x\n```\ny\n")).toBe("```\nx\n``\u200b`\ny\n```");
    expect(d.codeBlock("")).toBe("```\n \n```");
    expect("promptLimit" in markdownDialect({ limit: 1, mention: String })).toBe(false);
  });

  it("HTML as marked renders it, the agent's own HTML shown as text", () => {
    expect(markdownToHtml("**hi** <b>x</b>\n\n- a\n- b")).toBe("<p><strong>hi</strong> &lt;b&gt;x&lt;/b&gt;</p>\n<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n");
    expect(markdownToHtml("<script>alert(1)</script>")).toBe("&lt;script&gt;alert(1)&lt;/script&gt;");
  });
});

describe("ApprovalCodes", () => {
  it("a code decides its approval once; an unknown one and a spent one are refused, saying so", () => {
    const codes = new ApprovalCodes("the approval mail");
    const code = codes.issue("ap-1", "chan", "prompt-1");
    expect(code).toMatch(/^\d{8}$/);
    expect(codes.lookup(code)).toEqual({ approvalId: "ap-1", channel: "chan" });
    codes.spend(code, "approved by carol@example.org");
    expect(codes.lookup(code)).toEqual({ refusal: `The code ${code} was used already (approved by carol@example.org): nothing was decided.` });
    const other = code === "12345678" ? "87654321" : "12345678";
    expect(codes.lookup(other)).toEqual({ refusal: `No approval is waiting for the code ${other}: nothing was decided. Check the code in the approval mail.` });
    const late = codes.issue("ap-2", "chan", "prompt-2");
    codes.closed("prompt-2", "⌛ No decision in time: denied.");
    expect(codes.lookup(late)).toEqual({ refusal: `The code ${late} was used already (⌛ No decision in time: denied.): nothing was decided.` });
  });

  it("with a key, a code given before a restart still decides the prompt the answer names, and nothing else", async () => {
    const before = new ApprovalCodes("the approval mail", { key: "adapter secret" });
    const code = before.issue("ap-1", "thread-a", "prompt-1");
    expect(code).toMatch(/^\d{8}$/);
    expect(before.issue("ap-1", "thread-a", "prompt-1 again")).toBe(code);
    const after = new ApprovalCodes("the approval mail", { key: "adapter secret" });
    const clicks: unknown[] = [];
    const inbound = { decide: async (click: unknown) => (clicks.push(click), {}) };
    const carol = { id: "carol@example.org", username: "carol@example.org" };
    const refused = { refusal: expect.stringMatching(/^No approval is waiting for the code \d+: nothing was decided\./) };
    // Without the prompt it answers, or with another prompt, another channel, another key: nothing.
    expect(await after.decide(inbound, { code, decision: "allow-once" }, carol)).toEqual(refused);
    expect(await after.decide(inbound, { code, decision: "allow-once" }, carol, () => ({ approvalId: "ap-2", channel: "thread-a" }))).toEqual(refused);
    expect(await after.decide(inbound, { code, decision: "allow-once" }, carol, () => ({ approvalId: "ap-1", channel: "thread-b" }))).toEqual(refused);
    const otherKey = new ApprovalCodes("the approval mail", { key: "another secret" });
    expect(await otherKey.decide(inbound, { code, decision: "allow-once" }, carol, () => ({ approvalId: "ap-1", channel: "thread-a" }))).toEqual(refused);
    expect(clicks).toEqual([]);
    // Its own prompt: decided, and not spent here (the runner takes one decision, from one who may);
    // the prompt goes with the decision, to be closed with the outcome.
    const prompt = () => ({ approvalId: "ap-1", channel: "thread-a", promptId: "prompt-1" });
    expect(await after.decide(inbound, { code, decision: "deny" }, { id: "bob@example.org", username: "bob@example.org" }, prompt)).toEqual({});
    expect(await after.decide(inbound, { code, decision: "allow-once" }, carol, prompt)).toEqual({});
    expect(clicks).toEqual([
      { approvalId: "ap-1", decision: "deny", user: { id: "bob@example.org", username: "bob@example.org" }, channel: "thread-a", prompt: { ref: "prompt-1" } },
      { approvalId: "ap-1", decision: "allow-once", user: carol, channel: "thread-a", prompt: { ref: "prompt-1" } },
    ]);
    // Without a key nothing survives: the same code after a restart decides nothing.
    const random = new ApprovalCodes();
    const r = random.issue("ap-1", "thread-a", "p");
    expect(await new ApprovalCodes().decide(inbound, { code: r, decision: "allow-once" }, carol, prompt)).toEqual({ refusal: expect.stringMatching(/^No approval is waiting/) });
  });

  it("with a key, a code of before a restart typed where nothing names its prompt decides the waiting prompt of its chat it was given for, and nothing else", async () => {
    const code = new ApprovalCodes("the prompt", { key: "k" }).issue("ap-2", "#team", "ap-2");
    const after = new ApprovalCodes("the prompt", { key: "k" });
    const clicks: unknown[] = [];
    const inbound = { decide: async (click: unknown) => (clicks.push(click), {}) };
    const ana = { id: "ana", username: "ana" };
    const waiting = (channel: string, ...ids: string[]) => async () => ids.map((approvalId) => ({ approvalId, channel, promptId: approvalId }));
    // Another chat's prompts, or this chat's others: nothing.
    expect(await after.decide(inbound, { code, decision: "deny" }, ana, waiting("#other", "ap-2"))).toEqual({ refusal: expect.stringMatching(/^No approval is waiting/) });
    expect(await after.decide(inbound, { code, decision: "deny" }, ana, waiting("#team", "ap-1", "ap-3"))).toEqual({ refusal: expect.stringMatching(/^No approval is waiting/) });
    expect(clicks).toEqual([]);
    expect(await after.decide(inbound, { code, decision: "deny" }, ana, waiting("#team", "ap-1", "ap-2", "ap-3"))).toEqual({});
    expect(clicks).toEqual([{ approvalId: "ap-2", decision: "deny", user: ana, channel: "#team", prompt: { ref: "ap-2" } }]);
  });

  it("decide: a typed code becomes the decision, which spends it; a refused person leaves it for an approver", async () => {
    const codes = new ApprovalCodes();
    const code = codes.issue("ap-1", "#team", "p-1");
    const clicks: unknown[] = [];
    const inbound = { decide: async (click: { user: { id: string } }) => (clicks.push(click), click.user.id === "ana" ? {} : { refusal: "Only @ana can decide this." }) };
    expect(await codes.decide(inbound, { code: "12", decision: "deny" }, { id: "ana", username: "Ana" })).toEqual({ refusal: expect.stringMatching(/^No approval is waiting for the code 12: nothing was decided\. Check the code in the approval prompt\.$/) });
    expect(await codes.decide(inbound, { code, decision: "allow-once" }, { id: "bob", username: "bob" })).toEqual({ refusal: "Only @ana can decide this." });
    expect(await codes.decide(inbound, { code, decision: "allow-once" }, { id: "ana", username: "Ana" })).toEqual({});
    expect(clicks).toEqual([
      { approvalId: "ap-1", decision: "allow-once", user: { id: "bob", username: "bob" }, channel: "#team" },
      { approvalId: "ap-1", decision: "allow-once", user: { id: "ana", username: "Ana" }, channel: "#team" },
    ]);
    expect(await codes.decide(inbound, { code, decision: "deny" }, { id: "ana", username: "Ana" })).toEqual({ refusal: `The code ${code} was used already (approved by Ana): nothing was decided.` });
  });
});
