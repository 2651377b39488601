import { afterEach, describe, expect, it } from "@jest/globals";
import { startFakeGithub } from "@mom/testing";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startStack, type Stack } from "../support/stack.js";
import { channelReceipts } from "../support/receipts.js";
import { outboundEvents } from "../support/streams.js";

let s: Stack | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

// A ticket board kept in a JSON file beside the tool, so the test can read what really happened.
const TICKETS_TOOL = (board: string) => `
import Type from "typebox";
import { readFileSync, writeFileSync } from "node:fs";
const BOARD = ${JSON.stringify(board)};
const load = () => JSON.parse(readFileSync(BOARD, "utf8"));
const save = (b) => writeFileSync(BOARD, JSON.stringify(b));
export default [
  { id: "tickets.open.list", description: "Open tickets", risk: "read", parameters: Type.Object({}),
    execute: async () => ({ text: "open tickets", details: load().filter((t) => t.open) }) },
  { id: "tickets.ticket.label", description: "Adds a label to a ticket", risk: "write",
    parameters: Type.Object({ id: Type.Integer(), label: Type.String() }),
    execute: async ({ id, label }) => { const b = load(); b.find((t) => t.id === id).labels.push(label); save(b); return "labelled " + id; } },
  { id: "tickets.ticket.close", description: "Closes a ticket", risk: "destructive",
    parameters: Type.Object({ id: Type.Integer() }),
    execute: async ({ id }) => { const b = load(); b.find((t) => t.id === id).open = false; save(b); return "closed " + id; } },
  { id: "tickets.slow.wait", description: "Takes long", risk: "read", parameters: Type.Object({}),
    execute: (_a, ctx) => new Promise((resolve, reject) => { const t = setTimeout(() => resolve("late"), 30000); ctx.signal.addEventListener("abort", () => { clearTimeout(t); reject(new Error("aborted")); }); }) },
];
`;

function ticketsDir(): { dir: string; board: string } {
  const dir = mkdtempSync(join(tmpdir(), "mom-code-mode-tools-"));
  const board = join(dir, "board.json");
  const tickets = Array.from({ length: 30 }, (_, i) => ({ id: i + 1, title: i % 3 === 0 ? `login crash ${i}` : `typo ${i}`, open: i !== 5, labels: [] as string[] }));
  writeFileSync(board, JSON.stringify(tickets));
  mkdirSync(join(dir, "tools", "tickets"), { recursive: true });
  writeFileSync(join(dir, "tools", "tickets", "index.ts"), TICKETS_TOOL(board));
  return { dir, board };
}

const receipts = (st: Stack) => channelReceipts(st);

async function lastRunEnded(st: Stack) {
  const ended = (await outboundEvents(st.bus)).map((e) => e.event).filter((e) => e.type === "run_ended");
  return ended.at(-1) as Extract<(typeof ended)[number], { type: "run_ended" }>;
}

const runCode = (code: string, label = "Label the crash tickets") => ({ toolCalls: [{ name: "run_code", arguments: { label, code } }] });

const LABEL_AND_CLOSE = `
const open = (await tools.tickets.open.list({})).details as { id: number; title: string }[];
const crashes = open.filter((t) => t.title.includes("crash"));
let labelled = 0;
for (const t of crashes) if ((await tools.tickets.ticket.label({ id: t.id, label: "crash" })).ok) labelled++;
for (const t of open.filter((t) => !t.title.includes("crash")).slice(0, 10)) if ((await tools.tickets.ticket.label({ id: t.id, label: "triaged" })).ok) labelled++;
const closed = await tools.tickets.ticket.close({ id: 1 });
return { labelled, closed: closed.ok ? "yes" : closed.error };`;

describe("code mode through a real runner", () => {
  it("a script of twenty calls, one needing approval, waits for the person and leaves every receipt under its run_code call", async () => {
    const { dir, board } = ticketsDir();
    s = await startStack({ config: { tools: { globalDir: join(dir, "tools") } } });
    s.llm.enqueue(runCode(LABEL_AND_CLOSE), { text: "Labelled 20 tickets and closed #1." });
    s.type("label the crash tickets and close #1");
    await s.output.waitFor("🔐 Approval needed: mom wants to run tickets.ticket.close (destructive)");
    // Nothing after the close ran yet; everything before it did.
    expect(JSON.parse(readFileSync(board, "utf8")).find((t: { id: number }) => t.id === 1).open).toBe(true);
    s.type("y");
    await s.output.waitForAnswer("Labelled 20 tickets and closed #1.");

    const tickets = JSON.parse(readFileSync(board, "utf8")) as { id: number; open: boolean; labels: string[] }[];
    expect(tickets.filter((t) => t.labels.length).length).toBe(20);
    expect(tickets.find((t) => t.id === 1)!.open).toBe(false);

    const rs = receipts(s);
    const runCodeCall = rs.find((r) => r.toolId === "run_code")!;
    expect(rs.filter((r) => r.toolCallId === runCodeCall.toolCallId).map((r) => r.type)).toEqual(["tool.call.requested", "tool.call.started", "tool.call.succeeded"]);
    const nested = rs.filter((r) => r.parentToolCallId === runCodeCall.toolCallId);
    expect(new Set(nested.map((r) => r.toolCallId)).size).toBe(22); // list + 20 labels + close
    expect(nested.filter((r) => r.toolId === "tickets.ticket.close").map((r) => r.type)).toEqual(["tool.call.requested", "tool.call.approved", "tool.call.started", "tool.call.succeeded"]);
    expect(nested.find((r) => r.type === "tool.call.approved")).toMatchObject({ actor: "@tester" });
    expect(nested.every((r) => r.toolCallId.startsWith(`${runCodeCall.toolCallId}.`))).toBe(true);

    // What the model was told, and the activity under the answer, come from the receipts.
    expect(JSON.stringify(s.llm.requests[1]!.messages.at(-1))).toContain("Tool calls: 22 (22 succeeded, 0 did not)");
    const ended = await lastRunEnded(s);
    expect(ended.toolActivity!.filter((a) => a.toolId === "tickets.ticket.label" && a.status === "succeeded")).toHaveLength(20);
    expect(ended.toolActivity).toContainEqual(expect.objectContaining({ toolId: "tickets.ticket.close", status: "succeeded", risk: "destructive" }));
    // The prompt declared the tools for the script.
    const system = JSON.stringify(s.llm.requests[0]!.messages[0]);
    expect(system).toContain("## Code mode");
    expect(system).toContain("label(input: { id: integer, label: string }): Promise<Result>;");
  }, 60_000);

  it("a denied call comes back to the script as an error value; the activity says it was denied", async () => {
    const { dir, board } = ticketsDir();
    s = await startStack({ config: { tools: { globalDir: join(dir, "tools") } } });
    s.llm.enqueue(runCode(LABEL_AND_CLOSE), { text: "Closed #1." });
    s.type("label and close");
    await s.output.waitFor("🔐 Approval needed");
    s.type("n");
    await s.output.waitForAnswer("Closed #1.");
    expect(JSON.parse(readFileSync(board, "utf8")).find((t: { id: number }) => t.id === 1).open).toBe(true);
    const toModel = JSON.stringify(s.llm.requests[1]!.messages.at(-1));
    expect(toModel).toContain("tickets.ticket.close was not run");
    expect(toModel).toContain("Tool calls: 22 (21 succeeded, 1 did not)");
    // The model claimed it closed the ticket; what the reader sees under the answer says otherwise.
    const ended = await lastRunEnded(s);
    expect(ended.toolActivity).toContainEqual(expect.objectContaining({ toolId: "tickets.ticket.close", status: "denied" }));
    expect(s.output.text).toContain("⊘ tickets.ticket.close: denied (denied by @tester)");
  }, 60_000);

  it("policy turns code mode off per channel, and a script never sees a tool policy hides", async () => {
    const { dir } = ticketsDir();
    s = await startStack({ config: { tools: { globalDir: join(dir, "tools") }, policy: { channels: { "cli/local": { deny: ["run_code"] } } } } });
    s.llm.enqueue({ text: "ok" });
    s.type("hello");
    await s.output.waitForAnswer("ok");
    const request = s.llm.requests[0]!;
    expect((request.body.tools as { function: { name: string } }[]).map((t) => t.function.name)).not.toContain("run_code");
    expect(JSON.stringify(request.messages[0])).not.toContain("## Code mode");
    await s.stop();

    const other = ticketsDir();
    s = await startStack({ config: { tools: { globalDir: join(other.dir, "tools") }, policy: { tools: { deny: ["tickets.ticket.close"] } } } });
    s.llm.enqueue(runCode(`return (await tools.call("tickets.ticket.close", { id: 1 })).error`), { text: "could not" });
    s.type("close #1");
    await s.output.waitForAnswer("could not");
    expect(JSON.stringify(s.llm.requests[1]!.messages.at(-1))).toContain('unknown tool \\"tickets.ticket.close\\"');
    expect(JSON.parse(readFileSync(other.board, "utf8")).find((t: { id: number }) => t.id === 1).open).toBe(true);
  }, 60_000);

  it("stop ends a script at once, also while one of its tool calls runs", async () => {
    const { dir } = ticketsDir();
    s = await startStack({ config: { tools: { globalDir: join(dir, "tools") } } });
    s.llm.enqueue(runCode(`await tools.tickets.slow.wait({}); return "never"`, "Wait"));
    s.type("wait for it");
    const deadline = Date.now() + 15_000;
    while (!receipts(s).some((r) => r.toolId === "tickets.slow.wait" && r.type === "tool.call.started")) {
      if (Date.now() > deadline) throw new Error("the nested call did not start");
      await new Promise((r) => setTimeout(r, 50));
    }
    const stoppedAt = Date.now();
    s.type("stop");
    await s.output.waitFor("Stopped");
    expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    // Both calls end failed ("aborted"): the nested one and the run_code call around it.
    const until = Date.now() + 5_000;
    const failed = () => receipts(s!).filter((r) => r.type === "tool.call.failed").map((r) => r.toolId).sort();
    while (failed().length < 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect(failed()).toEqual(["run_code", "tickets.slow.wait"]);
  }, 60_000);

  it("GitHub: 'label every open issue that mentions flaky' is one script of twenty calls, the one close among them approved by a person", async () => {
    const gh = await startFakeGithub();
    try {
      for (let i = 1; i <= 60; i++) {
        gh.addIssue("acme/widgets", {
          title: i % 3 === 0 ? `Test ${i} is flaky on CI` : `Feature ${i}`,
          body: i === 12 ? "flaky, and a duplicate of #3" : "details",
          state: i === 27 ? "closed" : "open",
        });
      }
      s = await startStack({
        runner: false,
        config: {
          tools: {
            globalDir: join(dirname(fileURLToPath(import.meta.url)), "../../integrations"),
            settings: { github: { token: "file:github-token", baseUrl: gh.url, repo: "acme/widgets", repos: ["acme/widgets"] } },
          },
        },
      });
      writeFileSync(join(s.dataDir, "github-token"), gh.token);
      await s.startRunner();
      const script = `
const found = await tools.github.issues.search({ query: "flaky is:open" });
if (!found.ok) return found.error;
const issues = (found.details as { items: { number: number; title: string }[] }).items;
const done: number[] = [];
for (const i of issues) {
  const r = await tools.github.issue.label({ number: i.number, labels: ["flaky"] });
  if (r.ok) done.push(i.number);
}
const dup = await tools.github.issue.close({ number: 12, reason: "not_planned", comment: "Duplicate of #3" });
return { labelled: done, closed12: dup.ok };`;
      s.llm.enqueue(runCode(script, "Label the flaky issues"), { text: "Labelled the flaky issues and closed #12." });
      s.type("label every open issue that mentions flaky, and close #12 as a duplicate");
      await s.output.waitFor("🔐 Approval needed: mom wants to run github.issue.close (destructive)");
      // Every label landed before the close asked; the close waits for the person.
      expect(gh.issue("acme/widgets", 12)!.state).toBe("open");
      s.type("y");
      await s.output.waitForAnswer("Labelled the flaky issues and closed #12.");

      const flaky = gh.issues("acme/widgets").filter((i) => i.state === "open" || i.number === 12);
      const mentions = (i: { title: string; body: string | null }) => `${i.title} ${i.body}`.includes("flaky");
      const expected = gh.issues("acme/widgets").filter((i) => mentions(i) && i.number !== 27).map((i) => i.number);
      expect(expected).toHaveLength(19); // 19 labels + 1 close: twenty calls, and the search
      for (const i of flaky) expect(i.labels.some((l) => l.name === "flaky")).toBe(expected.includes(i.number));
      expect(gh.issue("acme/widgets", 27)!.labels).toEqual([]);
      expect(gh.issue("acme/widgets", 12)!.state).toBe("closed");

      const rs = receipts(s);
      const parent = rs.find((r) => r.toolId === "run_code")!.toolCallId;
      const nested = rs.filter((r) => r.parentToolCallId === parent);
      const calls = new Map<string, string>();
      for (const r of nested) calls.set(r.toolCallId, r.toolId);
      expect([...calls.values()].filter((t) => t === "github.issue.label")).toHaveLength(expected.length);
      expect(nested.filter((r) => r.toolId === "github.issue.close").map((r) => r.type)).toEqual(["tool.call.requested", "tool.call.approved", "tool.call.started", "tool.call.succeeded"]);
      expect(nested.filter((r) => r.type === "tool.call.succeeded")).toHaveLength(calls.size);
      // One model request for the whole loop, and one for the answer.
      expect(s.llm.requests).toHaveLength(2);
      const ended = await lastRunEnded(s);
      expect(ended.toolActivity!.filter((a) => a.toolId === "github.issue.label" && a.status === "succeeded")).toHaveLength(expected.length);
      expect(ended.toolActivity).toContainEqual(expect.objectContaining({ toolId: "github.issue.close", status: "succeeded" }));
    } finally {
      await gh.close();
    }
  }, 90_000);
});
