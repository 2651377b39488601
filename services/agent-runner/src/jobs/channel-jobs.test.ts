import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { ChannelMessage } from "@mom/contracts";
import { Sandbox } from "@mom/sandbox";
import { type ChannelStore, WorkspaceLayout } from "@mom/store";
import { spawn } from "node:child_process";
import { hostname } from "node:os";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { channelSandbox } from "../workspace-sandbox.js";
import { ChannelJobs, type JobLimits } from "./channel-jobs.js";
import { OutputTail } from "./output-tail.js";

/**
 * One channel's jobs on their own: real bubblewrap commands in a real channel directory; the bus is
 * their outer edge here (what would be published is kept). test/e2e/background-jobs.test.ts runs
 * them through a real runner, NATS and the scripted model.
 */
let dir: string;
let layout: WorkspaceLayout;
let sandbox: Sandbox;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mom-jobs-"));
  layout = new WorkspaceLayout(join(dir, "workspace"));
  await layout.ensureWorkspace();
  sandbox = new Sandbox({ type: "bwrap" }, { dataDir: dir, workspaceDir: layout.workspaceDir });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const by = { id: "u1", username: "ann" };
const HOST = hostname();

function setup(limits: Partial<JobLimits> = {}, o: { runnerId?: string; state?: () => string | undefined; sandboxMade?: Promise<void> } = {}) {
  const store: ChannelStore = layout.channel({ adapter: "cli", channelId: `c${Math.random().toString(36).slice(2, 8)}` });
  const published: ChannelMessage[] = [];
  let executor: ReturnType<typeof channelSandbox>["executor"] | undefined;
  const jobs = new ChannelJobs({
    ref: store.ref,
    store,
    executor: async () => {
      await o.sandboxMade;
      await store.prepareFiles();
      return (executor ??= channelSandbox(sandbox, store).executor);
    },
    limits: { maxPerChannel: 4, maxRuntimeMs: 60_000, outputKeptBytes: 64 * 1024, ...limits },
    runnerId: o.runnerId ?? "r-test",
    host: HOST,
    publish: async (m) => void published.push(m),
    refusal: o.state ?? (() => undefined),
    log: pino({ level: "silent" }),
  });
  const records = () => readFileSync(store.jobsFile, "utf8");
  return { store, jobs, published, records };
}

async function until<T>(what: string, f: () => T | undefined | false, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Pids of live processes whose command line contains `needle`. */
function processesWith(needle: string): number[] {
  return readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid)
    .filter((n) => {
      try {
        const stat = readFileSync(`/proc/${n}/stat`, "utf8");
        return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z") && readFileSync(`/proc/${n}/cmdline`, "utf8").split("\0").join(" ").includes(needle);
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe("background jobs of one channel", () => {
  it("a job runs on, then its end is published as a message from @jobs with the end of its output; jobs.jsonl is emptied", async () => {
    const { jobs, published, records } = setup();
    const job = await jobs.start("echo building; sleep 1; echo '3 failed'; exit 3", by, "thread-1");
    expect(job).toMatchObject({ running: true, state: expect.stringMatching(/^running for/) });
    expect(records()).toContain(`"id":"${job.id}"`);
    const [m] = await until("the job's end", () => published.length > 0 && published);
    expect(m).toMatchObject({
      id: `job:${job.id}:end`,
      sender: { id: "jobs", username: "jobs", isBot: true },
      isMention: true,
      replyTo: "thread-1",
      metadata: { job: { id: job.id, status: "exited", exitCode: 3, startedBy: by } },
    });
    expect(m!.text).toMatch(new RegExp(`^\\[JOB ${job.id} exited with code 3 after \\d+s\\] \`echo building; sleep 1; echo '3 failed'; exit 3\``));
    expect(m!.text).toContain("building\n3 failed");
    expect(m!.text).toContain("Tell the people in this channel how it went");
    await until("jobs.jsonl emptied", () => records() === "");
    expect(jobs.list()).toEqual([expect.objectContaining({ id: job.id, running: false, state: expect.stringMatching(/^exited with code 3 after/) })]);
  }, 30_000);

  it("poll shows the output since the last poll, and says what was not kept", async () => {
    const { jobs } = setup({ outputKeptBytes: 1000 });
    const job = await jobs.start("echo first; sleep 1.5; head -c 5000 /dev/zero | tr '\\0' x; echo; sleep 30", by);
    const first = await until("first output", () => {
      const p = jobs.poll(job.id);
      return p.output ? p : undefined;
    });
    expect(first.output).toBe("first\n");
    const second = await until("the long line", () => {
      const p = jobs.poll(job.id);
      return p.output ? p : undefined;
    });
    expect(second.output.length).toBeLessThanOrEqual(1000);
    // The trailing newline may come in a later chunk than the 5,000 x.
    expect(second.dropped).toBeGreaterThanOrEqual(4000);
    const killed = await jobs.kill(job.id, { kind: "tool" });
    expect(killed.job.state).toMatch(/^killed by the process tool after/);
  }, 30_000);

  it("no more than maxPerChannel at once, none while the channel is handed over, and an empty command is refused", async () => {
    let state: string | undefined;
    const { jobs } = setup({ maxPerChannel: 1 }, { state: () => state });
    const job = await jobs.start("sleep 30", by);
    await expect(jobs.start("sleep 30", by)).rejects.toThrow(/already runs 1 background job, the most it may \(runner\.jobs\.maxPerChannel\)\. Wait for one to end or kill one/);
    await jobs.kill(job.id, { kind: "tool" });
    state = "this channel is being handed to another runner; start the job again in a moment";
    await expect(jobs.start("true", by)).rejects.toThrow("process start refused: this channel is being handed to another runner");
    state = undefined;
    await expect(jobs.start("  ", by)).rejects.toThrow("non-empty `command`");
  }, 30_000);

  it("a start still under way when the channel begins to be handed over, or when `stop jobs` comes, is waited for: refused, or killed; none runs on", async () => {
    const token = `mom-job-late-${process.pid}`;
    let state: string | undefined;
    let sandboxMade!: () => void;
    const { store, jobs } = setup({}, { state: () => state, sandboxMade: new Promise<void>((r) => (sandboxMade = r)) });
    try {
      // The model's `process start` is making the channel's sandbox when the drain begins: the slot
      // leaves "owned" and the hand-over kills the channel's jobs.
      const starting = jobs.start(`bash -c 'exec -a ${token}-a sleep 600'`, by);
      state = "this channel is being handed to another runner; start the job again in a moment";
      const killed = jobs.killAll({ kind: "moved", to: "r2" });
      sandboxMade();
      await expect(starting).rejects.toThrow("process start refused: this channel is being handed to another runner");
      expect(await killed).toEqual([]);
      expect(jobs.running()).toEqual([]);
      expect(processesWith(`${token}-a`)).toEqual([]);
      expect((await store.readRunningJobs()).running).toEqual([]);

      // `stop jobs` while a start is being recorded: that job is one of those killed.
      state = undefined;
      let recorded!: () => void;
      const gate = new Promise<void>((r) => (recorded = r));
      const append = store.appendJobRecord.bind(store);
      store.appendJobRecord = async (r) => (await gate, append(r));
      const second = jobs.start(`bash -c 'exec -a ${token}-b sleep 600'`, by);
      const stopJobs = jobs.killAll({ kind: "stop", by: "@ann" });
      recorded();
      const job = await second;
      expect((await stopJobs).map((j) => j.id)).toEqual([job.id]);
      expect(processesWith(`${token}-b`)).toEqual([]);
    } finally {
      sandboxMade();
      await jobs.killAll({ kind: "tool" });
    }
  }, 30_000);

  it("a job is stopped at its runtime limit, and the channel is told why", async () => {
    const { jobs, published } = setup({ maxRuntimeMs: 1500 });
    const job = await jobs.start("echo start; sleep 60", by);
    const [m] = await until("the job's end", () => published.length > 0 && published);
    expect(m!.text).toMatch(new RegExp(`^\\[JOB ${job.id} stopped after \\ds: it ran longer than runner\\.jobs\\.maxRuntimeMinutes`));
    expect(m!.metadata).toMatchObject({ job: { status: "failed" } });
  }, 30_000);

  it("killed by the tool or by `stop jobs`: nothing is published (whoever asked knows), every process of it is gone", async () => {
    const { jobs, published, records } = setup();
    const token = `mom-job-kill-${process.pid}`;
    const a = await jobs.start(`(setsid sleep 600 & ) ; bash -c 'exec -a ${token}-a sleep 600'`, by);
    const b = await jobs.start(`bash -c 'exec -a ${token}-b sleep 600'`, by);
    await until("both running", () => processesWith(`${token}-a`).length > 0 && processesWith(`${token}-b`).length > 0);
    await jobs.kill(a.id, { kind: "tool" });
    expect(processesWith(`${token}-a`)).toEqual([]);
    const killed = await jobs.killAll({ kind: "stop", by: "@ann" });
    expect(killed.map((j) => j.id)).toEqual([b.id]);
    expect(killed[0]!.state).toMatch(/^killed by @ann \(stop jobs\) after/);
    expect(processesWith(token)).toEqual([]);
    expect(published).toEqual([]);
    await until("jobs.jsonl emptied", () => records() === "");
  }, 30_000);

  it("at shutdown each job is killed and its end published; a lost channel's jobs are killed and left in jobs.jsonl for the next owner", async () => {
    const { jobs, published, records } = setup();
    const job = await jobs.start("echo working; sleep 600", by);
    await until("output", () => jobs.poll(job.id).job.outputBytes > 0);
    await jobs.killAll({ kind: "shutdown" });
    expect(published).toHaveLength(1);
    expect(published[0]!.text).toMatch(new RegExp(`^\\[JOB ${job.id} killed because the runner it ran on shut down`));
    expect(published[0]!.text).toContain("working");
    expect(records()).toBe("");

    const lost = setup();
    const j2 = await lost.jobs.start("sleep 600", by);
    await lost.jobs.killAll({ kind: "fenced" });
    expect(lost.published).toEqual([]);
    expect(lost.records()).toContain(`"id":"${j2.id}"`);
  }, 30_000);

  it("the next owner tells each job of jobs.jsonl as lost, once, and kills what is left of it on this host", async () => {
    const { store, jobs, published, records } = setup({}, { runnerId: "r-new" });
    const execId = "3f0c2f5e-7a61-4d55-9c5b-111111111111";
    const token = `mom-job-leftover-${process.pid}`;
    // What a runner killed with -9 would leave with the host sandbox: a process carrying the job's marker.
    const left = spawn("bash", ["-c", `exec -a ${token} sleep 600`], { env: { ...process.env, MOM_EXEC_ID: execId }, detached: true, stdio: "ignore" });
    left.unref();
    await until("the leftover", () => processesWith(token).length > 0);
    await store.prepareFiles();
    writeFileSync(
      store.jobsFile,
      [
        { type: "started", id: "job-0000aaaa", execId, command: "npm test", startedAt: "2026-01-01T10:00:00.000Z", runner: "r-old", host: HOST, startedBy: by, replyTo: "t9" },
        { type: "started", id: "job-0000bbbb", execId: "x", command: "make", startedAt: "2026-01-01T10:00:00.000Z", runner: "r-old", host: HOST, startedBy: by },
        { type: "ended", id: "job-0000bbbb", endedAt: "2026-01-01T10:01:00.000Z" },
      ]
        .map((l) => JSON.stringify(l))
        .join("\n") + "\n",
    );
    await jobs.recover();
    expect(processesWith(token)).toEqual([]);
    expect(published).toHaveLength(1);
    expect(published[0]).toMatchObject({ id: "job:job-0000aaaa:end", replyTo: "t9", metadata: { job: { status: "lost" } } });
    expect(published[0]!.text).toMatch(/^\[JOB job-0000aaaa lost: runner r-old, which ran it, stopped or gave the channel up before it ended/);
    expect(records()).toBe("");
    // Nothing left to tell a second time.
    await jobs.recover();
    expect(published).toHaveLength(1);
  }, 30_000);

  it("a job cannot touch jobs.jsonl (read-only in its sandbox), and ids are this channel's only", async () => {
    const { jobs, published, records } = setup();
    const other = setup();
    const theirs = await other.jobs.start("sleep 600", by);
    const job = await jobs.start(`echo '{"type":"ended","id":"${theirs.id}","endedAt":"2026-01-01T00:00:00.000Z"}' >> jobs.jsonl; echo x > jobs.jsonl; rm -f jobs.jsonl; mv jobs.jsonl j2; ls jobs.jsonl`, by);
    const [m] = await until("the job's end", () => published.length > 0 && published);
    expect(m!.text).toMatch(/Read-only file system|Permission denied|Device or resource busy/);
    expect(m!.text).toContain("jobs.jsonl\n");
    // The end is told before it is written down (a crash between the two re-tells it under the same msg-id).
    await until("jobs.jsonl emptied", () => records() === "");
    expect(() => jobs.poll(theirs.id)).toThrow(new RegExp(`no background job "${theirs.id}" in this channel \\(its jobs: ${job.id}\\)`));
    await expect(jobs.kill(theirs.id, { kind: "tool" })).rejects.toThrow("no background job");
    expect(other.jobs.running().map((j) => j.id)).toEqual([theirs.id]);
    await other.jobs.killAll({ kind: "tool" });
  }, 30_000);
});

describe("OutputTail", () => {
  it("keeps the last bytes, counts all, and tells a reader what it missed", () => {
    const t = new OutputTail(10);
    t.push(Buffer.from("0123456"));
    expect(t.since(0)).toEqual({ text: "0123456", dropped: 0 });
    t.push(Buffer.from("789abcdef"));
    expect(t.total).toBe(16);
    expect(t.since(0)).toEqual({ text: "6789abcdef", dropped: 6 });
    expect(t.since(12)).toEqual({ text: "cdef", dropped: 0 });
    t.push(Buffer.from("ABCDEFGHIJKLMNOP"));
    expect(t.since(16)).toEqual({ text: "GHIJKLMNOP", dropped: 6 });
    expect(t.last(3)).toEqual({ text: "NOP", dropped: 0 });
  });
});
