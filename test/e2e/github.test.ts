// The GitHub integration end to end: the scripted model, real NATS, a real runner loading
// integrations/ as its global tools dir (as an operator sets it up), and the fake GitHub REST API
// on loopback. What the person is told rests on receipts, never on the model's text.
import { afterEach, beforeEach, describe, expect, it } from "@jest/globals";
import type { Receipt } from "@mom/contracts";
import { type FakeGithub, startFakeGithub } from "@mom/testing";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startStack, type Stack } from "../support/stack.js";
import { channelReceipts } from "../support/receipts.js";
import { outboundEvents } from "../support/streams.js";

const integrationsDir = join(dirname(fileURLToPath(import.meta.url)), "../../integrations");

let s: Stack | undefined;
let gh: FakeGithub;
beforeEach(async () => {
  gh = await startFakeGithub();
  gh.addIssue("acme/widgets", { title: "Crash on start", body: "It crashes when the config is empty.", labels: ["bug"], user: "ann", comments: [{ body: "Same here on 2.1", user: "bob" }] });
  gh.addIssue("acme/widgets", { title: "Crash when offline", body: "Stack trace attached.", user: "carol" });
  gh.addIssue("acme/widgets", { title: "Dark mode", body: "Please add one." });
  gh.addIssue("evil/elsewhere", { title: "Not yours" });
});
afterEach(async () => {
  await s?.stop();
  s = undefined;
  await gh.close();
});

/** A stack whose runner loads integrations/ with GitHub configured against the fake; the token in a file of the data dir. */
async function githubStack(): Promise<Stack> {
  s = await startStack({
    runner: false,
    config: { tools: { globalDir: integrationsDir, settings: { github: { token: "file:github-token", baseUrl: gh.url, repo: "acme/widgets", repos: ["acme/widgets"] } } } },
  });
  writeFileSync(join(s.dataDir, "github-token"), gh.token);
  await s.startRunner();
  return s;
}

const invoke = (tool: string, args: object, label: string) => ({ toolCalls: [{ name: "invoke_tool", arguments: { label, tool, args } }] });
const fileReceipts = (st: Stack) => channelReceipts(st);
const trail = (rs: Receipt[]) => rs.map((r) => `${r.toolId}:${r.type.replace("tool.call.", "")}`);

/** The receipts of the run with `runId`, once its last call's final receipt is on disk. */
async function runReceipts(st: Stack, count: number): Promise<Receipt[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const rs = fileReceipts(st);
    if (rs.length >= count || Date.now() > deadline) return rs;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function lastRunEnded(st: Stack, runs: number) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const ended = (await outboundEvents(st.bus)).map((e) => e.event).filter((e) => e.type === "run_ended");
    if (ended.length >= runs) return ended.at(-1) as Extract<(typeof ended)[number], { type: "run_ended" }>;
    if (Date.now() > deadline) throw new Error(`only ${ended.length} run_ended of ${runs}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("GitHub integration end to end", () => {
  it("a search runs at once and leaves its receipts; a call outside the allowed repos fails, reaches nothing, and the activity says so", async () => {
    const st = await githubStack();
    st.llm.enqueue(
      invoke("github.issues.search", { query: "crash", state: "open" }, "Search open crash issues"),
      invoke("github.issue.comment", { repo: "evil/elsewhere", number: 1, body: "hello" }, "Comment elsewhere"),
      { text: "Two open crash issues: #1 and #2. I could not comment on evil/elsewhere." },
    );
    st.type("which crash issues are open?");
    await st.output.waitForAnswer("Two open crash issues");
    expect(st.output.text).not.toContain("Approval needed");

    // the prompt listed the integration, and the model saw GitHub's answer
    expect(JSON.stringify(st.llm.requests[0]!.messages[0])).toContain("github.issues.search (risk: read)");
    const searchResult = JSON.stringify(st.llm.requests[1]!.messages.at(-1));
    expect(searchResult).toContain("acme/widgets#1 · open · issue · ");
    expect(searchResult).toContain("Crash on start");
    expect(searchResult).toContain("acme/widgets#2");
    expect(searchResult).not.toContain("Dark mode");
    expect(JSON.stringify(st.llm.requests[2]!.messages.at(-1))).toContain("evil/elsewhere is not a repo this integration may use");

    const rs = await runReceipts(st, 6);
    expect(trail(rs)).toEqual([
      "github.issues.search:requested",
      "github.issues.search:started",
      "github.issues.search:succeeded",
      "github.issue.comment:requested",
      "github.issue.comment:started",
      "github.issue.comment:failed",
    ]);
    expect(rs[0]).toMatchObject({ risk: "read" });
    expect(rs[5]).toMatchObject({ risk: "write", detail: expect.stringContaining("not a repo this integration may use") });
    // GitHub saw one search, with the token, scoped to the allowed repo; nothing reached the other repo
    expect(gh.calls.map((c) => `${c.method} ${c.path} ${c.query.q ?? ""}`.trim())).toEqual(["GET /search/issues crash repo:acme/widgets is:issue is:open"]);
    expect(gh.calls[0]!.token).toBe(gh.token);
    expect(gh.issue("evil/elsewhere", 1)!.comments).toEqual([]);

    const ended = await lastRunEnded(st, 1);
    expect(ended.toolActivity).toEqual([
      expect.objectContaining({ toolId: "github.issues.search", status: "succeeded", label: "Search open crash issues" }),
      expect.objectContaining({ toolId: "github.issue.comment", status: "failed", label: "Comment elsewhere" }),
    ]);
    expect(st.output.text).toContain("✗ github.issue.comment — Comment elsewhere: failed");
  }, 60_000);

  it("closing an issue waits for approval: approved, it is closed with the full receipt trail and the activity lists every call; denied, it stays open", async () => {
    const st = await githubStack();
    // run 1: read, comment, then close — which asks
    st.llm.enqueue(
      invoke("github.issues.search", { query: "crash" }, "Find crash issues"),
      invoke("github.issue.get", { number: 1 }, "Read #1"),
      invoke("github.issue.comment", { number: 1, body: "Fixed in 2.2, thanks @ann!" }, "Thank the reporter"),
      invoke("github.issue.close", { number: 1, reason: "completed" }, "Close #1"),
      { text: "Closed #1 after thanking the reporter." },
    );
    st.type("close the crash issue that is fixed");
    await st.output.waitFor("🔐 Approval needed: mom wants to run github.issue.close (destructive), asked by @tester\nrepo: acme/widgets\nnumber: 1\nreason: completed");
    // nothing closed while the approver thinks
    expect(gh.issue("acme/widgets", 1)!.state).toBe("open");
    st.type("y");
    await st.output.waitForAnswer("Closed #1 after thanking the reporter.");
    expect(gh.issue("acme/widgets", 1)).toMatchObject({ state: "closed", state_reason: "completed" });
    expect(gh.issue("acme/widgets", 1)!.comments.at(-1)).toMatchObject({ body: "Fixed in 2.2, thanks @&#8203;ann!", user: { login: "mom-bot" } });
    expect(JSON.stringify(st.llm.requests[2]!.messages.at(-1))).toContain("Crash on start");
    expect(JSON.stringify(st.llm.requests[4]!.messages.at(-1))).toContain("Closed acme/widgets#1 as completed.");

    let rs = await runReceipts(st, 13);
    const run1 = rs[0]!.runId;
    expect(rs.every((r) => r.runId === run1)).toBe(true);
    expect(trail(rs)).toEqual([
      "github.issues.search:requested",
      "github.issues.search:started",
      "github.issues.search:succeeded",
      "github.issue.get:requested",
      "github.issue.get:started",
      "github.issue.get:succeeded",
      "github.issue.comment:requested",
      "github.issue.comment:started",
      "github.issue.comment:succeeded",
      "github.issue.close:requested",
      "github.issue.close:approved",
      "github.issue.close:started",
      "github.issue.close:succeeded",
    ]);
    expect(rs[10]).toMatchObject({ risk: "destructive", actor: "@tester" });
    // the answer's activity, derived from the receipts: every call the answer rests on
    const ended = await lastRunEnded(st, 1);
    expect(ended.toolActivity).toEqual([
      expect.objectContaining({ toolId: "github.issues.search", status: "succeeded", label: "Find crash issues" }),
      expect.objectContaining({ toolId: "github.issue.get", status: "succeeded", label: "Read #1" }),
      expect.objectContaining({ toolId: "github.issue.comment", status: "succeeded", label: "Thank the reporter" }),
      expect.objectContaining({ toolId: "github.issue.close", status: "succeeded", label: "Close #1" }),
    ]);

    // run 2: the model wants #2 closed too; the person says no
    st.llm.enqueue(invoke("github.issue.close", { number: 2, reason: "not_planned" }, "Close #2"), { text: "I did not close #2: it was denied." });
    st.output.text = "";
    st.type("and close #2 as well");
    await st.output.waitFor("🔐 Approval needed: mom wants to run github.issue.close (destructive)");
    st.type("n");
    await st.output.waitForAnswer("I did not close #2: it was denied.");
    expect(st.output.text).toContain("⊘ Denied by @tester.");
    expect(gh.issue("acme/widgets", 2)!.state).toBe("open");
    expect(gh.calls.filter((c) => c.method === "PATCH").map((c) => c.path)).toEqual(["/repos/acme/widgets/issues/1"]);
    rs = (await runReceipts(st, 15)).filter((r) => r.runId !== run1);
    expect(trail(rs)).toEqual(["github.issue.close:requested", "github.issue.close:denied"]);
    expect(rs[1]).toMatchObject({ actor: "@tester" });
    const ended2 = await lastRunEnded(st, 2);
    expect(ended2.toolActivity).toEqual([expect.objectContaining({ toolId: "github.issue.close", status: "denied", label: "Close #2" })]);

    // the token was never in a prompt, a receipt or what the person saw
    const receiptsFile = readFileSync(join(st.loaded.paths.workspaceDir, "channels/cli/local/receipts.jsonl"), "utf8");
    for (const text of [JSON.stringify(st.llm.requests), receiptsFile, st.output.text]) expect(text).not.toContain(gh.token);
  }, 60_000);
});
