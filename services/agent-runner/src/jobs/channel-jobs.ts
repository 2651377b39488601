import type { JobView } from "@mom/agent";
import type { ChannelMessage, ChannelRef } from "@mom/contracts";
import { type ExecResult, type Executor, stoppedNote } from "@mom/sandbox";
import type { ChannelStore, JobStarted } from "@mom/store";
import prettyMs from "pretty-ms";
import { randomBytes, randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { END_OUTPUT_BYTES, type JobEndFacts, jobEndMessage } from "./job-message.js";
import { OutputTail } from "./output-tail.js";

export interface JobLimits {
  maxPerChannel: number;
  maxRuntimeMs: number;
  outputKeptBytes: number;
}

/**
 * Why the runner (not the job itself) ended a job. `tool` and `stop` were asked for by the model
 * or a person, who hear the outcome at once; `shutdown` and `moved` are told in the channel by a
 * job-end message; `fenced` and `restart` leave the telling to whoever holds the channel next
 * (it finds the job in jobs.jsonl, still running, and says it was lost).
 */
export type KillReason =
  | { kind: "tool" }
  | { kind: "stop"; by: string }
  | { kind: "shutdown" }
  | { kind: "moved"; to: string }
  | { kind: "fenced" }
  | { kind: "restart" };

export interface ChannelJobsDeps {
  ref: ChannelRef;
  store: ChannelStore;
  /** The channel's sandbox executor (the one bash uses), made on first use. */
  executor: () => Promise<Executor>;
  limits: JobLimits;
  runnerId: string;
  host: string;
  /** Publishes a job's end on the channel's inbound subject, under its msg-id (job-message.ts). */
  publish: (message: ChannelMessage) => Promise<void>;
  /** Why no job may start now (the channel is being handed over), or undefined. */
  refusal: () => string | undefined;
  log: Logger;
}

interface Job {
  id: string;
  execId: string;
  command: string;
  startedAt: Date;
  startedBy: { id: string; username: string };
  replyTo?: string;
  output: OutputTail;
  /** How far `process poll` has shown the output. */
  polledTo: number;
  abort: AbortController;
  killedFor?: KillReason;
  /** Resolves once the job has ended and its end is told and recorded. */
  settled: Promise<void>;
  ended?: { at: Date; result: ExecResult; summary: string; status: JobEndFacts["status"] };
}

/** Ended jobs kept for `process poll` and `list` (their output included), newest last. */
const ENDED_KEPT = 16;

/**
 * One channel's background jobs on the runner that owns it: commands started by the `process`
 * tool in the channel's sandbox (the executor bash uses, with its limits), running past the run
 * that started them. Each has a runtime cap and keeps only the end of its output. When one ends by
 * itself (or a limit ends it), its end is published as a message on the channel's inbound subject
 * and the agent gets a turn to report. jobs.jsonl records which are running, so the channel's next
 * owner can say which were lost when this runner died.
 */
export class ChannelJobs {
  private readonly jobs = new Map<string, Job>();
  /** Starts between the count check and the record: counted, so two at once cannot pass the limit. */
  private starting = 0;
  /** Starts under way (making the sandbox, recording the job): killAll waits for them. */
  private readonly startsInFlight = new Set<Promise<unknown>>();

  constructor(private readonly deps: ChannelJobsDeps) {}

  get runningCount(): number {
    let n = 0;
    for (const j of this.jobs.values()) if (!j.ended) n++;
    return n;
  }

  /** Starts `command`; throws an error the model can act on when it may not. */
  start(command: string, startedBy: { id: string; username: string }, replyTo?: string): Promise<JobView> {
    const started = this.startJob(command, startedBy, replyTo);
    const tracked = started.catch(() => {}).finally(() => this.startsInFlight.delete(tracked));
    this.startsInFlight.add(tracked);
    return started;
  }

  private async startJob(command: string, startedBy: { id: string; username: string }, replyTo?: string): Promise<JobView> {
    if (!command.trim()) throw new Error("process start needs a non-empty `command`.");
    const refusal = this.deps.refusal();
    if (refusal) throw new Error(`process start refused: ${refusal}.`);
    const { maxPerChannel, maxRuntimeMs, outputKeptBytes } = this.deps.limits;
    if (this.runningCount + this.starting >= maxPerChannel) {
      throw new Error(
        `process start refused: this channel already runs ${maxPerChannel} background job${maxPerChannel === 1 ? "" : "s"}, the most it may (runner.jobs.maxPerChannel). Wait for one to end or kill one (process kill).`,
      );
    }
    this.starting++;
    try {
      const executor = await this.deps.executor();
      const id = `job-${randomBytes(4).toString("hex")}`;
      const execId = randomUUID();
      const startedAt = new Date();
      // Recorded before it runs: a runner that dies from here on leaves it for the next owner to report.
      await this.deps.store.appendJobRecord({
        type: "started",
        id,
        execId,
        command,
        startedAt: startedAt.toISOString(),
        runner: this.deps.runnerId,
        host: this.deps.host,
        startedBy,
        ...(replyTo !== undefined && { replyTo }),
      });
      // The channel may have begun to be handed over (or been lost) while the sandbox was made and
      // the job recorded: its jobs were killed meanwhile, so this one must not run after them.
      const late = this.deps.refusal();
      if (late) {
        await this.deps.store.appendJobRecord({ type: "ended", id, endedAt: new Date().toISOString() }).catch(() => {});
        throw new Error(`process start refused: ${late}.`);
      }
      const output = new OutputTail(outputKeptBytes);
      const abort = new AbortController();
      const job: Job = { id, execId, command, startedAt, startedBy, replyTo, output, polledTo: 0, abort, settled: Promise.resolve() };
      const run = executor.exec({ command, execId, timeoutMs: maxRuntimeMs, signal: abort.signal, onData: (c) => output.push(c) });
      job.settled = run.then(
        (result) => this.ended(job, result, executor),
        (err: unknown) => this.ended(job, { exitCode: null, outputBytes: output.total }, executor, (err as Error).message),
      );
      this.jobs.set(id, job);
      this.deps.log.info({ job: id, command: command.slice(0, 200) }, "background job started");
      return this.view(job);
    } finally {
      this.starting--;
    }
  }

  /** The job's state and the output it printed since the last poll (as far as it is kept). */
  poll(id: string): { job: JobView; output: string; dropped: number } {
    const job = this.find(id);
    const { text, dropped } = job.output.since(job.polledTo);
    job.polledTo = job.output.total;
    return { job: this.view(job), output: text, dropped };
  }

  list(): JobView[] {
    return [...this.jobs.values()].map((j) => this.view(j));
  }

  running(): JobView[] {
    return [...this.jobs.values()].filter((j) => !j.ended).map((j) => this.view(j));
  }

  /** Kills one job and waits until it has ended; resolves its final state and the end of its output. */
  async kill(id: string, reason: KillReason): Promise<{ job: JobView; tail: string }> {
    const job = this.find(id);
    if (!job.ended) {
      job.killedFor ??= reason;
      job.abort.abort();
      await job.settled;
    }
    return { job: this.view(job), tail: job.output.last(END_OUTPUT_BYTES).text };
  }

  /** Kills every running job (shutdown, hand-over, `stop jobs`, a lost channel) and waits until each has ended and its end is told. */
  async killAll(reason: KillReason): Promise<JobView[]> {
    // A job still being started is not in the map yet: without this wait it would be missed and
    // run on (after `stop jobs`, or here after the channel went to another runner).
    while (this.startsInFlight.size > 0) await Promise.all([...this.startsInFlight]);
    const running = [...this.jobs.values()].filter((j) => !j.ended);
    for (const j of running) {
      j.killedFor ??= reason;
      j.abort.abort();
    }
    await Promise.all(running.map((j) => j.settled));
    return running.map((j) => this.view(j));
  }

  /**
   * A new tenure of the channel: jobs.jsonl names jobs that were running when the channel was last
   * held (here before a restart, or by a runner that died or lost it). None of them runs any more —
   * a runner's jobs die with it, and what might be left on this host is killed by its marker — so
   * each is told as lost, once (its end's msg-id is the one its runner would have used).
   */
  async recover(): Promise<void> {
    const { running, skipped } = await this.deps.store.readRunningJobs();
    if (skipped.length) this.deps.log.warn({ skipped }, "jobs.jsonl has lines that could not be read");
    if (running.length === 0) {
      if (skipped.length) await this.deps.store.compactJobRecords();
      return;
    }
    const executor = await this.deps.executor();
    for (const r of running) {
      if (r.host === this.deps.host) await executor.killLeftovers?.(r.execId).catch((err: unknown) => this.deps.log.warn({ err, job: r.id }, "could not look for what is left of a lost job"));
      await this.deps.publish(jobEndMessage(this.deps.ref, this.lostFacts(r)));
      await this.deps.store.appendJobRecord({ type: "ended", id: r.id, endedAt: new Date().toISOString() });
      this.deps.log.warn({ job: r.id, runner: r.runner, startedAt: r.startedAt }, "background job lost with its runner; the channel is told");
    }
    await this.compact();
  }

  private lostFacts(r: JobStarted): JobEndFacts {
    const by = r.runner === this.deps.runnerId ? "this runner" : `runner ${r.runner}`;
    return {
      jobId: r.id,
      command: r.command,
      startedAt: r.startedAt,
      startedBy: r.startedBy,
      ...(r.replyTo !== undefined && { replyTo: r.replyTo }),
      status: "lost",
      summary: `lost: ${by}, which ran it, stopped or gave the channel up before it ended (a runner's jobs end with it)`,
    };
  }

  private find(id: string): Job {
    const job = this.jobs.get(id.trim());
    if (!job) {
      const known = [...this.jobs.keys()];
      throw new Error(`no background job ${JSON.stringify(id)} in this channel${known.length ? ` (its jobs: ${known.join(", ")})` : " (it has none)"}; process list shows them.`);
    }
    return job;
  }

  private view(j: Job): JobView {
    const age = prettyMs((j.ended?.at.getTime() ?? Date.now()) - j.startedAt.getTime(), { secondsDecimalDigits: 0 });
    return {
      id: j.id,
      command: j.command,
      running: !j.ended,
      state: j.ended ? j.ended.summary : `running for ${age}`,
      outputBytes: j.output.total,
    };
  }

  /** The job's command is over: what ended it, told in the channel when nobody asked for it, and written down. */
  private async ended(job: Job, result: ExecResult, executor: Executor, error?: string): Promise<void> {
    const at = new Date();
    const took = prettyMs(at.getTime() - job.startedAt.getTime(), { secondsDecimalDigits: 0 });
    const reason = job.killedFor;
    let status: JobEndFacts["status"];
    let summary: string;
    if (error) {
      status = "failed";
      summary = `could not run: ${error}`;
    } else if (result.stopped === "aborted" && reason) {
      status = "killed";
      summary = `killed ${killedWhy(reason)} after ${took}`;
    } else if (result.stopped) {
      status = "failed";
      const note = stoppedNote(result, executor.maxOutputBytes, this.deps.limits.maxRuntimeMs, executor.limits);
      summary = `stopped after ${took}: ${result.stopped === "timeout" ? `it ran longer than runner.jobs.maxRuntimeMinutes (${Math.round(this.deps.limits.maxRuntimeMs / 60_000)} min)` : (note ?? result.stopped).replace(/^\[|\]$/g, "")}`;
    } else {
      status = "exited";
      const limit = result.hit ? `; ${stoppedNote(result, executor.maxOutputBytes, this.deps.limits.maxRuntimeMs, executor.limits)?.replace(/^\[|\]$/g, "")}` : "";
      summary = `${result.exitCode === null ? "ended by a signal" : `exited with code ${result.exitCode}`} after ${took}${limit}`;
    }
    job.ended = { at, result, summary, status };
    this.forgetOldest();
    this.deps.log.info({ job: job.id, status, exitCode: result.exitCode, stopped: result.stopped, outputBytes: job.output.total }, "background job ended");
    // Nobody to tell here: whoever asked heard it already (tool, stop), or the channel's next
    // holder tells it as lost, from jobs.jsonl (fenced, restart: this runner may write nothing more).
    if (reason?.kind === "fenced" || reason?.kind === "restart") return;
    try {
      if (!reason || reason.kind === "shutdown" || reason.kind === "moved") {
        const tail = job.output.last(END_OUTPUT_BYTES);
        await this.deps.publish(
          jobEndMessage(
            this.deps.ref,
            {
              jobId: job.id,
              command: job.command,
              startedAt: job.startedAt.toISOString(),
              startedBy: job.startedBy,
              ...(job.replyTo !== undefined && { replyTo: job.replyTo }),
              status,
              ...(status === "exited" && { exitCode: result.exitCode }),
              summary,
              output: { text: tail.text, shownBytes: Math.min(job.output.total, END_OUTPUT_BYTES), totalBytes: job.output.total },
            },
            at,
          ),
        );
      }
      await this.deps.store.appendJobRecord({ type: "ended", id: job.id, endedAt: at.toISOString() });
      await this.compact();
    } catch (err) {
      // Still "started" in jobs.jsonl: the channel's next holder reports it (the same msg-id, so once).
      this.deps.log.error({ err, job: job.id }, "could not tell or record a background job's end");
    }
  }

  /** jobs.jsonl is emptied when nothing of it runs. */
  private async compact(): Promise<void> {
    if (this.runningCount + this.starting === 0) await this.deps.store.compactJobRecords();
  }

  private forgetOldest(): void {
    const ended = [...this.jobs.values()].filter((j) => j.ended);
    for (const j of ended.slice(0, Math.max(0, ended.length - ENDED_KEPT))) this.jobs.delete(j.id);
  }
}

function killedWhy(r: KillReason): string {
  switch (r.kind) {
    case "tool":
      return "by the process tool";
    case "stop":
      return `by ${r.by} (stop jobs)`;
    case "shutdown":
      return "because the runner it ran on shut down (a restart or deploy; jobs do not survive one)";
    case "moved":
      return `because the channel moved to another runner (${r.to}); jobs do not move with it`;
    case "fenced":
      return "because this runner lost the channel";
    case "restart":
      return "because the channel was restarted on this runner";
  }
}
