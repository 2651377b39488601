import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import type { LogEntry, Receipt } from "@mom/contracts";
import type { FakeRequest, FakeTurn } from "@mom/testing";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { eventually, processesWith } from "../support/processes.js";
import { RunnerCluster } from "../support/runner-cluster.js";
import { startStack, type Stack } from "../support/stack.js";
import { outboundEvents } from "../support/streams.js";

/** The text of the newest user turn of a model request. */
function lastUserText(req: FakeRequest): string {
  const m = [...req.messages].reverse().find((x: { role: string }) => x.role === "user");
  if (!m) return "";
  return typeof m.content === "string" ? m.content : (m.content as { text?: string }[]).map((c) => c.text ?? "").join("");
}

/** The text of every tool result of a request, in order. */
function toolResults(req: FakeRequest): string[] {
  return req.messages.filter((m: { role: string }) => m.role === "tool").map((m: { content: unknown }) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
}

const start = (command: string, label = "Start a background job"): FakeTurn => ({ toolCalls: [{ name: "process", arguments: { label, action: "start", command } }] });
const jsonl = <T>(file: string): T[] =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T);

describe("background jobs through a real runner (bubblewrap, NATS, the scripted model)", () => {
  let s: Stack | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });
  const channelDir = (st: Stack) => join(st.loaded.paths.workspaceDir, "channels/cli/local");

  it("a background job that ends after the run and notifies the channel: the agent gets a turn and reports it", async () => {
    s = await startStack();
    s.llm.enqueue(start("sleep 2; echo 'ran 12 tests'; echo '3 failed'; exit 1", "Run the tests"), { text: "The tests are running; I will tell you when they finish." }, (req) =>
      lastUserText(req).includes("[JOB ") ? { text: "tests finished: 3 failed" } : { text: "not a job's end" },
    );
    s.type("run the tests and tell me when they are done");
    await s.output.waitForAnswer("The tests are running");
    await s.output.waitForAnswer("tests finished: 3 failed", 30_000);

    const report = lastUserText(s.llm.requests[2]!);
    expect(report).toMatch(/\[@jobs\]: \[JOB job-[0-9a-f]{8} exited with code 1 after \ds\] `sleep 2; echo 'ran 12 tests'; echo '3 failed'; exit 1` \(started by @tester/);
    expect(report).toContain("ran 12 tests\n3 failed");
    // The prompt told the model about jobs; the run that started the job was over before it ended.
    expect(JSON.stringify(s.llm.requests[0]!.messages[0])).toContain("## Background jobs");
    const events = (await outboundEvents(s.bus)).map((e) => ({ runId: e.runId, ...e.event })) as { runId: string; type: string; trigger?: { username: string } }[];
    const firstEnd = events.findIndex((e) => e.type === "run_ended");
    const jobRun = events.findIndex((e) => e.type === "run_started" && e.trigger?.username === "jobs");
    expect(firstEnd).toBeGreaterThan(-1);
    expect(jobRun).toBeGreaterThan(firstEnd);

    const log = jsonl<LogEntry>(join(channelDir(s), "log.jsonl"));
    expect(log.map((e) => [e.userName, e.text.split("\n")[0]!.slice(0, 20)])).toEqual([
      ["tester", "run the tests and te"],
      ["mom", "The tests are runnin"],
      ["jobs", expect.stringMatching(/^\[JOB job-/)],
      ["mom", "tests finished: 3 fa"],
    ]);
    expect(log[2]).toMatchObject({ id: expect.stringMatching(/^job:job-[0-9a-f]{8}:end$/), isBot: true, metadata: { job: { status: "exited", exitCode: 1, startedBy: { username: "tester" } } } });
    const rs = jsonl<Receipt>(join(channelDir(s), "receipts.jsonl")).filter((r) => r.toolId === "process");
    expect(rs.map((r) => r.type)).toEqual(["tool.call.requested", "tool.call.started", "tool.call.succeeded"]);
    expect(rs.every((r) => r.risk === "destructive")).toBe(true);
    expect(readFileSync(join(channelDir(s), "jobs.jsonl"), "utf8")).toBe("");
  }, 60_000);

  it("poll, list and kill from the model; the per-channel limit; `stop` lists what still runs, `stop jobs` kills it without a turn", async () => {
    s = await startStack({ config: { runner: { jobs: { maxPerChannel: 2 } } } });
    const token = `mom-e2e-job-${process.pid}`;
    const idOf = (req: FakeRequest, n: number) => [...toolResults(req).join("\n").matchAll(/Started (job-[0-9a-f]{8})/g)][n]![1]!;
    s.llm.enqueue(
      start(`echo hello-from-a; bash -c 'exec -a ${token}-a sleep 600'`),
      start(`bash -c 'exec -a ${token}-b sleep 600'`),
      start("true", "One too many"),
      // A moment later: the first job has printed by then.
      (req) => ({ delayMs: 1500, toolCalls: [{ name: "process", arguments: { label: "Check the first job", action: "poll", id: idOf(req, 0) } }] }),
      { toolCalls: [{ name: "process", arguments: { label: "List jobs", action: "list" } }] },
      (req) => ({ toolCalls: [{ name: "process", arguments: { label: "Stop the second", action: "kill", id: idOf(req, 1) } }] }),
      { toolCalls: [{ name: "process", arguments: { label: "Poll a job of nowhere", action: "poll", id: "job-deadbeef" } }] },
      { text: "two started, one killed" },
    );
    s.type("start the servers");
    await s.output.waitForAnswer("two started, one killed", 30_000);
    const results = toolResults(s.llm.requests.at(-1)!);
    expect(results[2]).toContain("this channel already runs 2 background jobs, the most it may (runner.jobs.maxPerChannel)");
    expect(results[3]).toMatch(/job-[0-9a-f]{8} \(`echo hello-from-a; .*`\): running for \d+m?s; \d+ bytes of output in all\.\nOutput since the last poll:\nhello-from-a/);
    expect(results[4]).toMatch(/^2 of at most 2 running:\n- job-[0-9a-f]{8}: running for/);
    expect(results[5]).toMatch(/^job-[0-9a-f]{8}: killed by the process tool after \d+m?s?/);
    expect(results[6]).toMatch(/no background job "job-deadbeef" in this channel \(its jobs: job-[0-9a-f]{8}, job-[0-9a-f]{8}\)/);
    expect(processesWith(`${token}-b`)).toEqual([]);
    expect(processesWith(`${token}-a`).length).toBeGreaterThan(0);
    // Each call is gated with the risk of its action: start and kill as bash, poll and list read.
    const asked = jsonl<Receipt>(join(channelDir(s), "receipts.jsonl")).filter((r) => r.toolId === "process" && r.type === "tool.call.requested");
    // start, start, start (refused), poll, list, kill, poll (no such job)
    expect(asked.map((r) => r.risk)).toEqual(["destructive", "destructive", "destructive", "read", "read", "destructive", "read"]);
    const requests = s.llm.requests.length;

    s.type("stop");
    await s.output.waitFor("A background job is still running (`stop` ends only the answer in progress)");
    await s.output.waitFor("Say `stop jobs` to kill them.");
    expect(processesWith(`${token}-a`).length).toBeGreaterThan(0);

    s.type("stop jobs");
    await s.output.waitFor(/Killed 1 background job:\n\s*- `job-[0-9a-f]{8}` killed by @tester \(stop jobs\)/);
    expect(processesWith(token)).toEqual([]);
    // Whoever killed them knows: no turn for the agent.
    await new Promise((r) => setTimeout(r, 1000));
    expect(s.llm.requests.length).toBe(requests);
    expect(readFileSync(join(channelDir(s), "jobs.jsonl"), "utf8")).toBe("");
  }, 60_000);

  it("policy can take `process` away from a channel", async () => {
    s = await startStack({ config: { policy: { channels: { "cli/local": { deny: ["process"] } } } } });
    s.llm.enqueue({ text: "ok" });
    s.type("hello");
    await s.output.waitForAnswer("ok");
    expect((s.llm.requests[0]!.body.tools as { function: { name: string } }[]).map((t) => t.function.name)).not.toContain("process");
    expect(JSON.stringify(s.llm.requests[0]!.messages[0])).not.toContain("## Background jobs");
  }, 60_000);
});

/**
 * A runner process with a job running is killed (-9) or stopped (SIGTERM): no process of the job
 * outlives it, the channel is told once by whoever holds it next, nothing is answered twice.
 */
describe("background jobs when their runner process goes", () => {
  let c: RunnerCluster;
  beforeAll(async () => {
    c = await RunnerCluster.start();
    c.llm.setFallback((req) => {
      const last = req.messages.at(-1) as { role: string };
      if (last.role === "tool") return { text: "started it" };
      const text = lastUserText(req);
      if (text.includes("[JOB ")) return { text: text.includes(" lost: ") ? `lost: ${/JOB (job-\w+)/.exec(text)![1]}` : text.includes("killed because the runner it ran on shut down") ? "killed by the restart" : "ended" };
      const token = /token (\S+)/.exec(text)?.[1] ?? "none";
      return start(`echo started; bash -c 'exec -a ${token} sleep 600'`);
    });
  }, 60_000);
  afterAll(async () => {
    await c?.stop();
  });

  const answersOf = (channel: string) => (c.answers().get(channel) ?? []).map((a) => a.text);
  const logOf = (channel: string) => jsonl<LogEntry>(join(c.dataDir, "workspace/channels/cli", channel, "log.jsonl"));

  it("SIGTERM: the runner kills the job, says so in the channel, exits 0; the next runner gives the agent its turn, once", async () => {
    const token = `mom-job-sigterm-${process.pid}`;
    const r1 = await c.addRunner();
    await c.publish("jobs-term", 1, `start the job, token ${token}`);
    expect(await eventually(() => answersOf("jobs-term").includes("started it"), 30_000)).toBe(true);
    expect(await eventually(() => processesWith(token).length > 0, 10_000)).toBe(true);

    r1.child.kill("SIGTERM");
    expect(await r1.exited).toBe(0);
    expect(processesWith(token)).toEqual([]);

    await c.addRunner();
    expect(await eventually(() => answersOf("jobs-term").length >= 2, 30_000)).toBe(true);
    await new Promise((r) => setTimeout(r, 2000));
    expect(answersOf("jobs-term")).toEqual(["started it", "killed by the restart"]);
    const jobLines = logOf("jobs-term").filter((e) => e.userName === "jobs");
    expect(jobLines).toHaveLength(1);
    expect(jobLines[0]!.text).toMatch(/^\[JOB job-[0-9a-f]{8} killed because the runner it ran on shut down/);
    expect(jobLines[0]!.text).toContain("started");
  }, 90_000);

  it("kill -9: the job's processes die with the runner; the next owner says it was lost, once", async () => {
    const token = `mom-job-kill9-${process.pid}`;
    // Only the new runner may take the channel: stop every runner left from before.
    for (const r of c.runners) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill("SIGTERM");
    await Promise.all(c.runners.map((r) => r.exited));
    const r = await c.addRunner();
    await c.publish("jobs-kill", 1, `start the job, token ${token}`);
    expect(await eventually(() => answersOf("jobs-kill").includes("started it"), 30_000)).toBe(true);
    expect(await eventually(() => processesWith(token).length > 0, 10_000)).toBe(true);
    const recorded = readFileSync(join(c.dataDir, "workspace/channels/cli/jobs-kill/jobs.jsonl"), "utf8");
    const jobId = (JSON.parse(recorded.split("\n")[0]!) as { id: string }).id;

    r.child.kill("SIGKILL");
    await r.exited;
    // bwrap --die-with-parent: the sandbox and everything in it go with the runner, at once.
    expect(await eventually(() => processesWith(token).length === 0, 3000)).toBe(true);

    await c.addRunner();
    expect(await eventually(() => answersOf("jobs-kill").length >= 2, 45_000)).toBe(true);
    await new Promise((res) => setTimeout(res, 2000));
    expect(answersOf("jobs-kill")).toEqual(["started it", `lost: ${jobId}`]);
    const jobLines = logOf("jobs-kill").filter((e) => e.userName === "jobs");
    expect(jobLines).toHaveLength(1);
    expect(jobLines[0]!.text).toMatch(new RegExp(`^\\[JOB ${jobId} lost: runner r\\d, which ran it, stopped or gave the channel up before it ended`));
    expect(readFileSync(join(c.dataDir, "workspace/channels/cli/jobs-kill/jobs.jsonl"), "utf8")).toBe("");
  }, 120_000);
});
