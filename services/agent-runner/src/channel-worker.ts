import { type ChannelAgent, formatChatLine, type RunOutcome, type RunTrigger, ZERO_USAGE } from "@mom/agent";
import type { BusyMode } from "@mom/config";
import type { Bus } from "@mom/bus";
import { type ChannelMessage, type ChannelRef, isStopCommand, type LogEntry, type Receipt } from "@mom/contracts";
import { relevantActivity } from "@mom/tools";
import type { ChannelStore } from "@mom/store";
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { RunPublisher } from "./run-publisher.js";

export interface ChannelWorkerDeps {
  bus: Bus;
  ref: ChannelRef;
  store: ChannelStore;
  createAgent: () => Promise<ChannelAgent>;
  log: Logger;
  runTimeoutMs: number;
  /** Shared by all channels of this runner: caps how many runs execute at once. */
  runSlot: <T>(fn: () => Promise<T>) => Promise<T>;
  /** Fetches the message's attachments into the channel dir before it is logged (attachment-materializer.ts). */
  materialize?: (message: ChannelMessage) => Promise<ChannelMessage>;
  /** Why no run can happen here (policy leaves no callable tools), or undefined. */
  policyProblem?: () => string | undefined;
  /** A tool call ended in error; the gate records a denial when pi refused a hidden tool. */
  onToolError?: (toolCallId: string, toolName: string) => Promise<void>;
  /** What a mention does while a run is active (adapter setting). */
  busyMode: BusyMode;
}

interface QueuedRun {
  runId: string;
  message: ChannelMessage;
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
}

export const BUSY_TEXT = "I'm still working on the previous request. Say `stop` to cancel it, or ask again when I'm done.";
const SILENT = "[SILENT]";

const HANDED_OVER = "the runner is shutting down; another runner will answer this message";

export class RunnerShuttingDown extends Error {
  override name = "RunnerShuttingDown";
  constructor() {
    super("runner shutting down: message handed back for redelivery");
  }
}


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
 * Everything that happens in one channel on this runner: the log is appended in arrival order,
 * runs happen one at a time in order, `stop` cuts through at once.
 */
export class ChannelWorker {
  private agent?: Promise<ChannelAgent>;
  private tail: Promise<void> = Promise.resolve();
  private readonly queued: QueuedRun[] = [];
  private current?: QueuedRun;
  private closing = false;
  lastActivity = Date.now();

  constructor(private readonly deps: ChannelWorkerDeps) {}

  /** The run in progress, for tools that publish into it (attach). */
  get currentRun(): { runId: string; message: ChannelMessage; publisher: RunPublisher; receipts: Receipt[] } | undefined {
    return this.current;
  }

  get busy(): boolean {
    return this.current !== undefined || this.queued.length > 0;
  }

  /** Resolves when the message is fully handled (logged, and its run finished if it starts one). */
  async accept(message: ChannelMessage): Promise<void> {
    this.lastActivity = Date.now();
    if (this.deps.materialize) message = await this.deps.materialize(message);
    const fresh = await this.deps.store.appendLog(toLogEntry(message));
    if (message.isMention && isStopCommand(message.text)) {
      await this.stop(`@${message.sender.username}`);
      return;
    }
    if (!message.isMention) return;
    if (!fresh && (await this.alreadyAnswered(message.id))) return; // a re-publish after the duplicate window, or a redelivery
    if (this.busy && this.deps.busyMode === "reject") return this.reject(message);
    if (this.current && this.deps.busyMode === "steer" && (await this.steer(this.current, message))) return;
    await this.enqueue(message);
  }

  private reject(message: ChannelMessage): Promise<void> {
    const pub = new RunPublisher(this.deps.bus, this.deps.ref, randomUUID(), this.deps.log);
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
   * Hands the message to the running run. Its bus delivery stays unacked until that run ends; if
   * the run ended before pi picked the message up, it gets a run of its own.
   */
  private async steer(run: QueuedRun, message: ChannelMessage): Promise<boolean> {
    const agent = await this.agent;
    if (!agent || !(await agent.steer(this.runTrigger(message)))) return false;
    run.steered.push(message);
    const undelivered = await run.ended;
    if (undelivered.includes(formatChatLine(this.runTrigger(message)))) await this.enqueue(message);
    return true;
  }

  /** Aborts the running run and cancels queued ones. */
  async stop(by: string, runId?: string): Promise<void> {
    for (const q of this.queued) if (!runId || q.runId === runId) q.cancelledBy = by;
    if (this.current && (!runId || this.current.runId === runId)) {
      this.deps.log.info({ runId: this.current.runId, by }, "aborting run");
      await (await this.agent)?.abort();
    }
  }

  /**
   * Runner shutdown: runs in progress are aborted and their messages handed back to the bus
   * (accept() rejects, so the message is nak'd and another runner answers it).
   */
  async shutdown(): Promise<void> {
    this.closing = true;
    await this.stop("runner shutdown");
  }

  async dispose(): Promise<void> {
    const agent = await this.agent?.catch(() => undefined);
    agent?.dispose();
    this.agent = undefined;
  }

  private enqueue(message: ChannelMessage): Promise<void> {
    const runId = randomUUID();
    let end!: (undelivered: string[]) => void;
    const ended = new Promise<string[]>((r) => (end = r));
    const item: QueuedRun = { runId, message, publisher: new RunPublisher(this.deps.bus, this.deps.ref, runId, this.deps.log.child({ runId })), steered: [], ended, end, receipts: [], labels: new Map() };
    this.queued.push(item);
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
      item.end(undelivered);
    }
  }

  /** Runs one queued item; resolves with the steered lines pi did not deliver. */
  private async executeRun(item: QueuedRun): Promise<string[]> {
    const { publisher: pub, message, runId } = item;
    const log = this.deps.log.child({ runId, msgId: message.id });
    const started = Date.now();
    if (this.closing) {
      pub.emit(this.ended({ stopReason: "aborted", errorMessage: HANDED_OVER, finalText: "", usage: ZERO_USAGE }, message, started));
      await pub.flushed();
      throw new RunnerShuttingDown();
    }
    if (item.cancelledBy) {
      pub.emit(this.ended({ stopReason: "aborted", errorMessage: `cancelled by ${item.cancelledBy} before it started`, finalText: "", usage: ZERO_USAGE }, message, started));
      await pub.flushed();
      return [];
    }
    this.current = item;
    let outcome: RunOutcome;
    try {
      const agent = await this.getAgent();
      pub.emit({ type: "run_started", trigger: this.trigger(message), ...(message.replyTo !== undefined && { replyTo: message.replyTo }), model: agent.modelName });
      log.info("run started");
      const timer = setTimeout(() => void agent.abort(), this.deps.runTimeoutMs);
      try {
        const problem = this.deps.policyProblem?.();
        if (problem) throw new Error(problem);
        outcome = await agent.run(this.runTrigger(message), (body) => {
          if (body.type === "tool_execution_start") item.labels.set(body.toolCallId, body.label);
          if (body.type === "tool_execution_end" && body.isError) void this.deps.onToolError?.(body.toolCallId, body.toolName);
          pub.emit(body);
        });
      } finally {
        clearTimeout(timer);
      }
    } catch (err) {
      log.error({ err }, "run failed before the agent could start");
      outcome = { stopReason: "error", errorMessage: (err as Error).message, finalText: "", usage: ZERO_USAGE };
    } finally {
      this.current = undefined;
      this.lastActivity = Date.now();
    }
    if (this.closing) {
      pub.emit(this.ended({ ...outcome, stopReason: "aborted", errorMessage: HANDED_OVER, finalText: "" }, message, started));
      await pub.flushed();
      throw new RunnerShuttingDown();
    }
    // "[SILENT]": a scheduled check with nothing to say; the adapter posts nothing.
    const silent = outcome.finalText.startsWith(SILENT);
    if (outcome.finalText) {
      await this.deps.store.appendLog(replyLogEntry(runId, message, outcome.finalText));
    }
    const toolActivity = relevantActivity(item.receipts, item.labels);
    pub.emit({
      ...this.ended(silent ? { ...outcome, finalText: "" } : outcome, message, started),
      ...(silent && { silent: true }),
      ...(toolActivity.length > 0 && { toolActivity }),
    });
    log.info({ stopReason: outcome.stopReason, durationMs: Date.now() - started, tokens: outcome.usage.totalTokens, silent }, "run ended");
    await pub.flushed();
    return outcome.undelivered ?? [];
  }

  private ended(o: RunOutcome, m: ChannelMessage, started: number) {
    return {
      type: "run_ended" as const,
      stopReason: o.stopReason,
      ...(o.errorMessage !== undefined && { errorMessage: o.errorMessage }),
      finalText: o.finalText,
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
      this.agent = this.deps.createAgent();
      this.agent.catch(() => (this.agent = undefined)); // retry creation on the next message
    }
    return this.agent;
  }

  private async alreadyAnswered(messageId: string): Promise<boolean> {
    const { entries } = await this.deps.store.readLog();
    return entries.some((e) => e.isBot && e.metadata?.triggerId === messageId);
  }
}
