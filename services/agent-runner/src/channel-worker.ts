import { type ChannelAgent, formatChatLine, type RunOutcome, type RunTrigger, type SyncCursor, ZERO_USAGE } from "@mom/agent";
import type { BusyMode } from "@mom/config";
import type { Bus } from "@mom/bus";
import { type ChannelMessage, type ChannelRef, escapeChannelToken, type InterruptedRun, REANNOUNCED_SEQ, isNewSessionCommand, isStopCommand, isStopJobsCommand, type LogEntry, qualifiedChannelId, type Receipt } from "@mom/contracts";
import { relevantActivity } from "@mom/tools";
import type { ChannelStore } from "@mom/store";
import { randomUUID } from "node:crypto";
import { LRUCache } from "lru-cache";
import pRetry from "p-retry";
import type { Logger } from "pino";
import type { ActiveRun } from "./active-run.js";
import { RunPublisher } from "./run-publisher.js";
import { RunTelemetry } from "./run-telemetry.js";
import { fitAnswer } from "./answer-fit.js";
import { ChannelLost } from "./cluster/channel-ledger.js";
import type { ChannelSlot } from "./cluster/channel-slots.js";
import type { ChannelJobs } from "./jobs/channel-jobs.js";
import { isJobMessage } from "./jobs/job-message.js";
import { jobsKilledText, jobsStillRunningText } from "./jobs/stop-jobs.js";

export interface ChannelWorkerDeps {
  bus: Bus;
  ref: ChannelRef;
  /**
   * Where the channel is on this runner (cluster/channel-slots.ts owns it): draining, the worker
   * starts nothing new; stopping, down or let go of, it writes nothing more.
   */
  slot: ChannelSlot;
  store: ChannelStore;
  createAgent: () => Promise<ChannelAgent>;
  log: Logger;
  runTimeoutMs: number;
  /** Shared by all channels of this runner: caps how many runs execute at once. */
  runSlot: <T>(fn: () => Promise<T>) => Promise<T>;
  /** Whether a run would get a slot at once. */
  slotFree: () => boolean;
  /** Fetches the message's attachments into the channel dir before it is logged (attachment-materializer.ts). */
  materialize?: (message: ChannelMessage) => Promise<ChannelMessage>;
  /** Why no run can happen here (policy leaves no callable tools), or undefined. */
  policyProblem?: () => string | undefined;
  /** A tool call ended in error; the gate records a denial when pi refused a hidden tool. */
  onToolError?: (toolCallId: string, toolName: string) => Promise<void>;
  /** What a mention does while a run is active (adapter setting). */
  busyMode: BusyMode;
  /** Set to each run while it executes, for the parts acting inside it (gate, attach). */
  active: ActiveRun;
  /** How far this channel's messages are done, shared with the runner that takes it over. */
  ledger: WorkerLedger;
  /** Attempts of one message that may end with the runner dying before it is set aside. */
  maxCrashes: number;
  /** How long one outbound event is retried through a NATS outage. */
  publishRetryMs: number;
  /** A message could not be finished here (e.g. its events never reached the bus): start the channel over. */
  onFailure?: () => void;
  /** A message that cannot be handled at all goes here with the reason (the DLQ). */
  deadLetter: (message: ChannelMessage, seq: number, reason: string) => Promise<void>;
  /** The channel's background jobs: `stop` lists the running ones, `stop jobs` kills them. */
  jobs?: Pick<ChannelJobs, "running" | "killAll">;
}

/** What the worker needs of cluster/channel-ledger.ts. */
export interface WorkerLedger {
  readonly interrupted?: InterruptedRun;
  /** The interruption was this runner's own (it lost the bus and set the channel down): not a crash. */
  readonly excused: boolean;
  begin(seq: number): boolean;
  runStarting(run: Omit<InterruptedRun, "phase">): Promise<void>;
  runNotStarted(): Promise<void>;
  handedOver(): Promise<void>;
  done(seq: number): Promise<void>;
}

/** How a run continues an attempt that was cut off. */
interface Resume {
  fromRunId: string;
  crashes: number;
}

interface QueuedRun {
  runId: string;
  seq: number;
  message: ChannelMessage;
  /** The trace context the message arrived with (its ingress's span). */
  traceparent?: string;
  resume?: Resume;
  /** The run's record, written while its message was logged (see accept). */
  recorded?: Promise<void>;
  publisher: RunPublisher;
  cancelledBy?: string;
  /** Messages injected into this run (busy mode "steer"). */
  steered: ChannelMessage[];
  /** Resolves with what pi did not deliver when the run is over. */
  ended: Promise<string[]>;
  end: (undelivered: string[]) => void;
  /** This run's tool receipts (the gate appends them) and the tool labels seen. */
  receipts: Receipt[];
  labels: Map<string, string>;
  /** Aborted because the channel's hand-over grace ran out: its end says so, and the next owner runs it. */
  cutOff?: boolean;
}

export const BUSY_TEXT = "I'm still working on the previous request. Say `stop` to cancel it, or ask again when I'm done.";
const SILENT = "[SILENT]";

/** Said under an answer that could not be written to the channel's log. */
function unsavedNote(err: unknown): string {
  return `_(mom could not save this answer in the channel's log.jsonl, so it will not be part of this channel's history: ${(err as Error).message})_`;
}

const HANDED_OVER = "the runner is shutting down; another runner will answer this message";

/** The worker stopped before this message was done; whoever owns the channel next reads it again. */
export class NotHandledHere extends Error {
  override name = "NotHandledHere";
  constructor(why: string) {
    super(why);
  }
}

const INTERRUPTED = "interrupted: the runner answering it stopped unexpectedly; another runner resumes it";
/** Intake retries: 3, after 250 ms, 1 s and 4 s. */
const INTAKE_RETRIES = { count: 3, firstMs: 250, factor: 4 };
/** Message ids a worker remembers for telling a re-sent message from a re-read one. */
const TAKEN_IDS = 10_000;

/** A run recorded before it was queued (ChannelWorker.accept). */
interface Early {
  runId: string;
  recorded: Promise<void>;
}

/** What taking a message in leads to; wrapped so that awaiting the intake never waits for the run. */
interface Later {
  done: Promise<void>;
}
const NOW: Later = { done: Promise.resolve() };


export function toLogEntry(m: ChannelMessage): LogEntry {
  return {
    id: m.id,
    date: m.timestamp,
    user: m.sender.id,
    userName: m.sender.username,
    ...(m.sender.displayName !== undefined && { displayName: m.sender.displayName }),
    text: m.text,
    attachments: m.attachments,
    isBot: m.sender.isBot,
    isMention: m.isMention,
    ...(m.replyTo !== undefined && { replyTo: m.replyTo }),
    ...(m.metadata !== undefined && { metadata: m.metadata }),
  };
}

/** mom's answer as a log line; `metadata.triggerId` is how a redelivery knows it was answered. */
export function replyLogEntry(runId: string, trigger: Pick<ChannelMessage, "id" | "replyTo">, text: string): LogEntry {
  return {
    id: `${runId}:reply`,
    date: new Date().toISOString(),
    user: "mom",
    userName: "mom",
    text,
    attachments: [],
    isBot: true,
    ...(trigger.replyTo !== undefined && { replyTo: trigger.replyTo }),
    runId,
    metadata: { triggerId: trigger.id },
  };
}

/**
 * Everything that happens in one channel on the runner that owns it: messages come in stream
 * order (deliver), are logged in that order, runs happen one at a time, `stop` cuts through at
 * once. Each message is reported done to the ledger when it is fully handled, which is what lets
 * another runner take the channel over exactly where this one stopped.
 */
export class ChannelWorker {
  private agent?: Promise<ChannelAgent>;
  private tail: Promise<void> = Promise.resolve();
  private intake: Promise<void> = Promise.resolve();
  private readonly queued: QueuedRun[] = [];
  private current?: QueuedRun;
  private readonly inFlight = new Set<Promise<void>>();
  lastActivity = Date.now();

  constructor(private readonly deps: ChannelWorkerDeps) {}

  /** Nothing new starts here: "release" (being handed over) or "fenced" (no longer ours to write). */
  private get halted(): "release" | "fenced" | undefined {
    const state = this.deps.slot.state;
    return state === "owned" ? undefined : state === "draining" ? "release" : "fenced";
  }

  get busy(): boolean {
    return this.current !== undefined || this.queued.length > 0 || this.inFlight.size > 0;
  }

  /**
   * Takes the channel's next message (stream sequence `seq`). Re-reads of a sequence already
   * taken are ignored. Never throws: failures are retried, then dead-lettered.
   */
  deliver(seq: number, message: ChannelMessage, traceparent?: string): void {
    // Being handed over, the channel waits for its run to end: a `stop` must still reach that run
    // (the next owner reads the message again, when nothing is left to stop).
    if (this.halted === "release" && message.isMention && isStopCommand(message.text)) {
      void this.stop(`@${message.sender.username}`);
      return;
    }
    if (this.halted || !this.deps.ledger.begin(seq)) return;
    this.lastActivity = Date.now();
    const job = this.handle(seq, message, traceparent).then(
      () => this.deps.ledger.done(seq),
      (err: unknown) => {
        if (err instanceof NotHandledHere) return;
        this.deps.log.error({ err, seq }, "message not handled: restarting the channel from its saved progress");
        this.deps.onFailure?.();
      },
    );
    const tracked = job.catch(() => {}).finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  /** Intake (materialise, log, decide) in arrival order, retried; then the run, if one starts. */
  private handle(seq: number, message: ChannelMessage, traceparent: string | undefined): Promise<void> {
    let started!: (outcome: Later) => void;
    const later = new Promise<Later>((r) => (started = r));
    this.intake = this.intake.then(async () => {
      let attempts = 0;
      try {
        started(
          await pRetry(
            () => {
              if (this.halted) return { done: Promise.reject(new NotHandledHere(`worker ${this.halted}`)) };
              attempts++;
              return this.accept(seq, message, traceparent);
            },
            {
              // 4 attempts, 250 ms, 1 s and 4 s apart.
              retries: INTAKE_RETRIES.count,
              minTimeout: INTAKE_RETRIES.firstMs,
              factor: INTAKE_RETRIES.factor,
              // Fenced: the channel's next owner takes the message in; nothing to retry or set aside here.
              shouldRetry: ({ error, retriesConsumed }) => {
                if (error instanceof ChannelLost) return false;
                this.deps.log.warn({ err: error, seq, msgId: message.id, retryInMs: INTAKE_RETRIES.firstMs * INTAKE_RETRIES.factor ** retriesConsumed }, "taking a message in failed; retrying");
                return true;
              },
            },
          ),
        );
      } catch (err) {
        if (err instanceof ChannelLost) return started({ done: Promise.reject(new NotHandledHere(err.message)) });
        const reason = `could not take the message in after ${attempts} attempts: ${(err as Error).message}`;
        this.deps.log.error({ err, seq, msgId: message.id }, reason);
        started({ done: this.deps.deadLetter(message, seq, reason) });
      }
    });
    return later.then((l) => l.done);
  }

  /** Logs the message and decides what it does; `done` settles when it is fully handled. */
  private async accept(seq: number, message: ChannelMessage, traceparent: string | undefined): Promise<Later> {
    if (this.deps.materialize) message = await this.deps.materialize(message);
    const interrupted = this.deps.ledger.interrupted?.seq === seq ? this.deps.ledger.interrupted : undefined;
    // A new mention in a channel with nothing in hand runs at once, so its run is recorded while
    // the message is logged: a round trip less before the answer starts.
    let early: Early | undefined;
    const startEarly = !interrupted && this.runsAtOnce(message) ? () => (early = this.recordEarly(seq, message.id)) : undefined;
    const fresh = await this.deps.store.appendLog(toLogEntry(message), startEarly);
    if (!fresh && !interrupted && (await this.isDuplicate(seq, message))) return NOW;
    this.noteTaken(message.id, seq);
    if (!message.isMention) return NOW;
    if (isStopCommand(message.text)) return { done: this.stop(`@${message.sender.username}`).then(() => this.sayJobsStillRunning(message)) };
    if (isStopJobsCommand(message.text)) return { done: this.stopJobs(message) };
    if (isNewSessionCommand(message.text)) return { done: this.newSession(message) };
    if (interrupted) return this.resume(seq, message, interrupted, traceparent);
    // A job's end always gets its turn: refused as "busy", nobody would ever hear of it.
    if ((this.current || this.queued.length > 0) && this.deps.busyMode === "reject" && !isJobMessage(message)) return { done: this.reject(message) };
    if (this.current && this.deps.busyMode === "steer") {
      const steered = await this.steer(seq, this.current, message);
      if (steered) return steered;
    }
    return { done: this.enqueue(seq, message, undefined, traceparent, early) };
  }

  /** Whether a mention taken in now starts its run right away: no run of this channel in hand, a slot free. */
  private runsAtOnce(message: ChannelMessage): boolean {
    return message.isMention && !isStopCommand(message.text) && !isStopJobsCommand(message.text) && !isNewSessionCommand(message.text) && !this.halted && this.unfinished.size === 0 && this.deps.slotFree();
  }

  private recordEarly(seq: number, messageId: string): Early {
    const runId = randomUUID();
    const recorded = this.deps.ledger.runStarting({ seq, messageId, runId, crashes: 0 });
    // Awaited when the run starts; a run that never starts (cancelled, set down) leaves it unawaited.
    recorded.catch(() => {});
    return { runId, recorded };
  }

  /**
   * A message whose id is already logged came again as another stream message (a producer
   * re-sent it under a new msg-id): it is not answered twice. Said in the log, never silently.
   * The same stream message read again (an intake retry, or a new owner re-reading what the
   * previous one logged but did not finish) is no duplicate, unless its answer is already logged.
   */
  private async isDuplicate(seq: number, message: ChannelMessage): Promise<boolean> {
    const firstSeq = this.taken.peek(message.id);
    const resent = firstSeq !== undefined && firstSeq !== seq;
    const answered = await this.deps.store.findReplyTo(message.id);
    if (!resent && !answered) return false;
    this.deps.log.warn(
      { msgId: message.id, seq, ...(firstSeq !== undefined && { firstSeq }), ...(answered?.runId && { answeredBy: answered.runId }) },
      answered ? "duplicate message: already answered; not answering it again" : "duplicate message: already taken in; not answering it again",
    );
    return true;
  }

  /** Message ids taken in here and their stream sequence; the least recently taken are forgotten past TAKEN_IDS. */
  private readonly taken = new LRUCache<string, number>({ max: TAKEN_IDS });

  private noteTaken(id: string, seq: number): void {
    this.taken.set(id, seq);
  }

  /**
   * The previous owner left this message's run unfinished. If its answer is already in the log
   * only the end is announced again; otherwise the run's end is announced as interrupted and the
   * message runs again, told what the cut-off attempt did. A message whose runs keep killing
   * their runner is set aside after maxCrashes.
   */
  private async resume(seq: number, message: ChannelMessage, was: InterruptedRun, traceparent: string | undefined): Promise<Later> {
    const log = this.deps.log.child({ runId: was.runId, msgId: message.id });
    const endOf = async (event: Parameters<RunPublisher["emit"]>[0]) => {
      const pub = new RunPublisher(this.deps.bus, this.deps.ref, was.runId, log, this.deps.publishRetryMs, REANNOUNCED_SEQ);
      // Its start first, under the start's own msg-id: JetStream drops it when the first owner's
      // is on the stream, and it is there when that never got out (cut off with the run's other
      // events by a lost quorum). Without it the ingress drew an end it could not reply with.
      const model = await this.getAgent().then((a) => a.modelName, () => "(not known: the channel's agent could not be made)");
      pub.emit({ type: "run_started", trigger: this.trigger(message), ...(message.replyTo !== undefined && { replyTo: message.replyTo }), model });
      pub.emit(event);
      return pub.flushed();
    };
    const reply = await this.deps.store.findLogEntry(`${was.runId}:reply`);
    if (reply) {
      log.warn("the interrupted run had answered; announcing its end again");
      await endOf(this.ended({ stopReason: "stop", finalText: reply.text, usage: ZERO_USAGE }, message, Date.now()));
      return NOW;
    }
    const crashes = was.crashes + (was.phase === "running" && !this.deps.ledger.excused ? 1 : 0);
    if (was.phase === "running" && crashes >= this.deps.maxCrashes) {
      const reason = `set aside: ${crashes} attempts at this message ended with the runner dying`;
      log.error({ crashes }, reason);
      await endOf(this.ended({ stopReason: "error", errorMessage: `${reason}. An operator can find it in the dead letters.`, finalText: "", usage: ZERO_USAGE }, message, Date.now()));
      await this.deps.deadLetter(message, seq, reason);
      return NOW;
    }
    if (was.phase === "running") {
      log.warn({ crashes }, this.deps.ledger.excused ? "resuming a run this runner set down when it lost the bus" : "resuming a run whose runner died");
      await endOf(this.ended({ stopReason: "aborted", errorMessage: INTERRUPTED, finalText: "", usage: ZERO_USAGE }, message, Date.now()));
    }
    return { done: this.enqueue(seq, message, { fromRunId: was.runId, crashes }, traceparent) };
  }

  private reject(message: ChannelMessage): Promise<void> {
    const pub = new RunPublisher(this.deps.bus, this.deps.ref, randomUUID(), this.deps.log, this.deps.publishRetryMs);
    pub.emit({
      type: "run_rejected",
      trigger: this.trigger(message),
      reason: "busy",
      text: BUSY_TEXT,
      ...(message.replyTo !== undefined && { replyTo: message.replyTo }),
    });
    return pub.flushed();
  }

  /**
   * Hands the message to the running run; it is done when that run ends. If the run ended before
   * pi picked it up, it gets a run of its own. Undefined when it could not be steered.
   */
  private async steer(seq: number, run: QueuedRun, message: ChannelMessage): Promise<Later | undefined> {
    const agent = await this.agent;
    // Stopped, the run is only ending: a message after the stop is a request of its own.
    if (run.cancelledBy) return undefined;
    if (!agent || !(await agent.steer(this.runTrigger(message)))) return undefined;
    run.steered.push(message);
    return {
      done: run.ended.then((undelivered) => {
        if (!undelivered.includes(formatChatLine(this.runTrigger(message)))) return undefined;
        const item = this.enqueue(seq, message);
        // A `stop` of the run it was steered into cancels it as it cancels queued ones (stop() could
        // not reach it: it was in pi's queue, not this one); it must not run on its own after the stop.
        if (run.cancelledBy) this.queued.at(-1)!.cancelledBy ??= run.cancelledBy;
        return item;
      }),
    };
  }

  /** Aborts the running run and cancels queued ones. */
  async stop(by: string, runId?: string): Promise<void> {
    for (const q of this.queued) if (!runId || q.runId === runId) q.cancelledBy = by;
    if (this.current && (!runId || this.current.runId === runId)) {
      this.current.cancelledBy = by;
      this.deps.log.info({ runId: this.current.runId, by }, "aborting run");
      await (await this.agent)?.abort();
    }
  }

  /** After a `stop`: the background jobs it left running, and how to end them, said in the channel. */
  private async sayJobsStillRunning(message: ChannelMessage): Promise<void> {
    const running = this.deps.jobs?.running() ?? [];
    if (running.length > 0) await this.say(message, jobsStillRunningText(running));
  }

  /** `stop jobs`: every background job of the channel killed, and which, said in the channel. */
  private async stopJobs(message: ChannelMessage): Promise<void> {
    const killed = (await this.deps.jobs?.killAll({ kind: "stop", by: `@${message.sender.username}` })) ?? [];
    this.deps.log.info({ msgId: message.id, killed: killed.map((j) => j.id) }, "stop jobs");
    await this.say(message, jobsKilledText(killed));
  }

  /** A reply of the runner's own to a typed command (a run_ended with no run), as `/new` answers. */
  private async say(message: ChannelMessage, text: string): Promise<void> {
    const pub = new RunPublisher(this.deps.bus, this.deps.ref, randomUUID(), this.deps.log, this.deps.publishRetryMs);
    pub.emit(this.ended({ stopReason: "stop", finalText: text, usage: ZERO_USAGE }, message, Date.now()));
    await this.flushed(pub);
  }

  /** Set by `/new`: the next agent's session starts after this log entry. */
  private freshAfter?: SyncCursor;

  /**
   * `/new`: once the runs queued before it are done, the channel's agent session starts anew —
   * context.jsonl archived (context-<time>.jsonl), log.jsonl kept, its earlier lines not synced
   * into the new session. Said in the channel as a reply of its own (a run_ended with no run).
   */
  private newSession(message: ChannelMessage): Promise<void> {
    const done = this.tail.then(() => this.resetSession(message));
    this.tail = done.catch(() => {});
    return done;
  }

  private async resetSession(message: ChannelMessage): Promise<void> {
    if (this.halted) throw new NotHandledHere(`worker ${this.halted}: left for the next owner`);
    const started = Date.now();
    const pub = new RunPublisher(this.deps.bus, this.deps.ref, randomUUID(), this.deps.log, this.deps.publishRetryMs);
    let text: string;
    try {
      (await this.agent?.catch(() => undefined))?.dispose();
      this.agent = undefined;
      const archived = await this.deps.store.archiveContext();
      this.freshAfter = { lastId: message.id };
      this.deps.log.info({ msgId: message.id, archived }, "new session");
      text = archived
        ? `Started a new session: the conversation so far is no longer in my context (log.jsonl keeps it; the old session is archived as ${archived}).`
        : "Started a new session (there was no earlier session to archive).";
    } catch (err) {
      if (err instanceof ChannelLost) throw new NotHandledHere(err.message);
      this.deps.log.error({ err, msgId: message.id }, "could not start a new session");
      pub.emit(this.ended({ stopReason: "error", errorMessage: `could not start a new session: ${(err as Error).message}`, finalText: "", usage: ZERO_USAGE }, message, started));
      return this.flushed(pub);
    }
    pub.emit(this.ended({ stopReason: "stop", finalText: text, usage: ZERO_USAGE }, message, started));
    await this.flushed(pub);
  }

  /**
   * The channel is draining: waits for the run boundary. The running run finishes (or, past
   * `graceMs`, is aborted and marked handed over), queued messages are left undone for the next
   * owner. Resolves when nothing of this channel runs here any more.
   */
  async release(graceMs: number): Promise<void> {
    const timer = setTimeout(() => {
      if (this.current) this.current.cutOff = true;
      void this.stopCurrent();
    }, graceMs);
    await this.settled();
    clearTimeout(timer);
  }

  /** The channel is no longer ours (stopping or down: taken over, or this runner lost the bus): abort, write nothing more. */
  async fence(): Promise<void> {
    // The run whose agent is done but whose events are still going out too: they would land after
    // whatever the next owner publishes for that run (its end, announced again).
    for (const run of this.unfinished) run.publisher.cancel();
    await this.stopCurrent();
    await this.settled();
  }

  private async stopCurrent(): Promise<void> {
    if (this.current) await (await this.agent)?.abort();
  }

  /** Waits until no message of this worker is in hand. */
  private async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  async dispose(): Promise<void> {
    const agent = await this.agent?.catch(() => undefined);
    agent?.dispose();
    this.agent = undefined;
  }

  /** Queued, running, or still publishing their last events. */
  private readonly unfinished = new Set<QueuedRun>();

  /** Runs waiting for their turn (this channel's queue), for the queue-depth gauge. */
  get queuedRuns(): number {
    return this.queued.length;
  }

  private enqueue(seq: number, message: ChannelMessage, resume?: Resume, traceparent?: string, early?: Early): Promise<void> {
    const runId = early?.runId ?? randomUUID();
    let end!: (undelivered: string[]) => void;
    const ended = new Promise<string[]>((r) => (end = r));
    const publisher = new RunPublisher(this.deps.bus, this.deps.ref, runId, this.deps.log, this.deps.publishRetryMs);
    publisher.traceparent = traceparent;
    // Something queued meanwhile (a steered line pi did not take) runs first and records itself
    // over the early record: this run then records itself again when it starts.
    const recorded = this.unfinished.size === 0 ? early?.recorded : undefined;
    const item: QueuedRun = { runId, seq, message, traceparent, resume, recorded, publisher, steered: [], ended, end, receipts: [], labels: new Map() };
    this.queued.push(item);
    this.unfinished.add(item);
    if (this.current || this.queued.length > 1) {
      item.publisher.emit({ type: "run_queued", trigger: this.trigger(message), position: this.queued.length });
    }
    const done = this.tail.then(() => this.deps.runSlot(() => this.execute(item)));
    this.tail = done.catch(() => {});
    return done;
  }

  private trigger(m: ChannelMessage) {
    return { messageId: m.id, senderId: m.sender.id, username: m.sender.username, text: m.text };
  }

  private async execute(item: QueuedRun): Promise<void> {
    this.queued.splice(this.queued.indexOf(item), 1);
    let undelivered: string[] = [];
    try {
      undelivered = await this.executeRun(item);
    } finally {
      this.unfinished.delete(item);
      item.end(undelivered);
    }
  }

  /** Runs one queued item; resolves with the steered lines pi did not deliver. */
  private async executeRun(item: QueuedRun): Promise<string[]> {
    const { publisher: pub, message, runId } = item;
    // Fields rather than a pino child: a child serialises its bindings even when nothing is logged.
    const log = this.deps.log;
    const at = { runId, msgId: message.id };
    const started = Date.now();
    if (this.halted) {
      // Recorded as running, it would count as a crash for whoever reads the message next.
      if (item.recorded && this.halted === "release") await this.deps.ledger.runNotStarted().catch(() => {});
      throw new NotHandledHere(`worker ${this.halted}: left for the next owner`);
    }
    if (item.cancelledBy) {
      pub.emit(this.ended({ stopReason: "aborted", errorMessage: `cancelled by ${item.cancelledBy} before it started`, finalText: "", usage: ZERO_USAGE }, message, started));
      await this.flushed(pub);
      return [];
    }
    // From here a `stop` reaches this run, even before the agent is running.
    this.current = item;
    this.deps.active.current = item;
    let outcome: RunOutcome;
    let telemetry: RunTelemetry | undefined;
    try {
      try {
        await (item.recorded ?? this.deps.ledger.runStarting({ seq: item.seq, messageId: message.id, runId, crashes: item.resume?.crashes ?? 0 }));
      } catch (err) {
        // Lost the channel, or could not record the run: the next owner (or a restart) runs it.
        if (!this.halted) this.deps.onFailure?.();
        throw new NotHandledHere(`run not started: ${(err as Error).message}`);
      }
      telemetry = new RunTelemetry({ traceparent: item.traceparent, channel: qualifiedChannelId(this.deps.ref), runId, messageId: message.id });
      pub.traceparent = telemetry.traceparent;
      const agent = await this.getAgent();
      pub.emit({
        type: "run_started",
        trigger: this.trigger(message),
        ...(message.replyTo !== undefined && { replyTo: message.replyTo }),
        model: agent.modelName,
        ...(item.resume && { resumedFrom: item.resume.fromRunId }),
      });
      log.info(item.resume ? { ...at, resumedFrom: item.resume.fromRunId } : at, "run started");
      const timer = setTimeout(() => void agent.abort(), this.deps.runTimeoutMs);
      try {
        const problem = this.deps.policyProblem?.();
        if (problem) throw new Error(problem);
        const resume = item.resume ? { note: await this.resumeNote(item.resume.fromRunId) } : undefined;
        // Stopped, cut off for a hand-over, or the channel lost, while it was being set up: the
        // agent never starts (an abort before its run began had nothing to abort; a lost channel's
        // new owner runs the message, and two prompts would land in one context.jsonl).
        outcome = item.cancelledBy || item.cutOff || this.halted === "fenced"
          ? { stopReason: "aborted", finalText: "", usage: ZERO_USAGE }
          : await agent.run(this.runTrigger(message), (body) => {
              if (body.type === "tool_execution_start") item.labels.set(body.toolCallId, body.label);
              if (body.type === "tool_execution_end" && body.isError) void this.deps.onToolError?.(body.toolCallId, body.toolName);
              telemetry!.event(body);
              pub.emit(body);
            }, resume);
      } finally {
        clearTimeout(timer);
      }
    } catch (err) {
      if (err instanceof NotHandledHere) throw err;
      log.error({ ...at, err }, "run failed before the agent could start");
      outcome = { stopReason: "error", errorMessage: (err as Error).message, finalText: "", usage: ZERO_USAGE };
    } finally {
      this.current = undefined;
      this.deps.active.current = undefined;
      this.lastActivity = Date.now();
    }
    telemetry?.end(outcome, Date.now() - started);
    if (this.halted === "fenced") throw new NotHandledHere("channel taken over mid-run");
    if (item.cutOff && outcome.stopReason === "aborted") {
      pub.emit(this.ended({ ...outcome, stopReason: "aborted", errorMessage: HANDED_OVER, finalText: "" }, message, started));
      await this.flushed(pub);
      await this.deps.ledger.handedOver();
      throw new NotHandledHere("run handed over");
    }
    // "[SILENT]": a scheduled check with nothing to say; the adapter posts nothing.
    const silent = outcome.finalText.startsWith(SILENT);
    if (outcome.finalText) {
      try {
        await this.deps.store.appendLog(replyLogEntry(runId, message, outcome.finalText));
      } catch (err) {
        if (err instanceof ChannelLost) throw new NotHandledHere(err.message);
        // The answer exists only in this process now: it goes out on the bus with a word about it,
        // rather than a retry that would run the whole message again and fail the same way.
        log.error({ ...at, err }, "could not write the answer to log.jsonl; publishing it anyway");
        if (!silent) outcome = { ...outcome, finalText: `${outcome.finalText}\n\n${unsavedNote(err)}` };
      }
    }
    const toolActivity = relevantActivity(item.receipts, item.labels);
    pub.emit({
      ...this.ended(silent ? { ...outcome, finalText: "" } : outcome, message, started),
      ...(silent && { silent: true }),
      ...(toolActivity.length > 0 && { toolActivity }),
    });
    log.info({ ...at, stopReason: outcome.stopReason, durationMs: Date.now() - started, tokens: outcome.usage.totalTokens, silent }, "run ended");
    await this.flushed(pub);
    if (pub.lostEvents > 0) {
      // The channel never saw (part of) this run: leave the message undone so the end is announced again.
      throw new Error(`${pub.lostEvents} event(s) of run ${runId} could not be published`);
    }
    // Done before the next run can start and be recorded (deliver's own done() comes later, harmlessly).
    void this.deps.ledger.done(item.seq);
    return outcome.undelivered ?? [];
  }

  /**
   * Waits until the run's events are out. A fence cancels what is still unpublished, and then the
   * message is not done here: whoever holds the channel next announces the run's end.
   */
  private async flushed(pub: RunPublisher): Promise<void> {
    await pub.flushed();
    if (this.halted === "fenced") throw new NotHandledHere("channel set down while the run's events went out");
  }

  /** What the cut-off attempt did, from its receipts: the only actions it may be said to have done. */
  private async resumeNote(fromRunId: string): Promise<string> {
    const { entries } = await this.deps.store.readReceipts();
    const activity = relevantActivity(entries.filter((r) => r.runId === fromRunId));
    const did = activity.length
      ? activity.map((a) => `- ${a.toolId} (call ${a.toolCallId}): ${a.status}${a.detail ? ` — ${a.detail}` : ""}`).join("\n")
      : "- no tool call was made";
    return (
      "[mom: your previous attempt at answering this message was interrupted before it finished (its runner stopped). " +
      "Its tool calls, from the receipts:\n" +
      did +
      "\nDo not repeat an action that succeeded; check its effect if you need to. Then continue and answer the message.]"
    );
  }

  private ended(o: RunOutcome, m: ChannelMessage, started: number) {
    return {
      type: "run_ended" as const,
      stopReason: o.stopReason,
      ...(o.errorMessage !== undefined && { errorMessage: o.errorMessage }),
      finalText: fitAnswer(o.finalText, `channels/${this.deps.ref.adapter}/${escapeChannelToken(this.deps.ref.channelId)}/log.jsonl`),
      ...(m.replyTo !== undefined && { replyTo: m.replyTo }),
      usage: o.usage,
      durationMs: Date.now() - started,
    };
  }

  private runTrigger(m: ChannelMessage): RunTrigger {
    return { id: m.id, date: m.timestamp, userName: m.sender.username, text: m.text, attachments: m.attachments };
  }

  private getAgent(): Promise<ChannelAgent> {
    if (!this.agent) {
      const fresh = this.freshAfter;
      this.freshAfter = undefined;
      this.agent = this.deps.createAgent().then((agent) => (fresh && agent.startAfter(fresh), agent));
      this.agent.catch(() => {
        this.agent = undefined; // retry creation on the next message
        this.freshAfter ??= fresh;
      });
    }
    return this.agent;
  }
}
