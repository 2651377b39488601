import { type ChannelAgent, type RunOutcome, type RunTrigger, ZERO_USAGE } from "@mom/agent";
import type { Bus } from "@mom/bus";
import type { ChannelMessage, ChannelRef, LogEntry } from "@mom/contracts";
import type { ChannelStore } from "@mom/store";
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { RunPublisher } from "./run-publisher.js";
import { isStopCommand } from "./stop-command.js";

export interface ChannelWorkerDeps {
  bus: Bus;
  ref: ChannelRef;
  store: ChannelStore;
  createAgent: () => Promise<ChannelAgent>;
  log: Logger;
  runTimeoutMs: number;
  /** Shared by all channels of this runner: caps how many runs execute at once. */
  runSlot: <T>(fn: () => Promise<T>) => Promise<T>;
}

interface QueuedRun {
  runId: string;
  message: ChannelMessage;
  publisher: RunPublisher;
  cancelledBy?: string;
}

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

  get busy(): boolean {
    return this.current !== undefined || this.queued.length > 0;
  }

  /** Resolves when the message is fully handled (logged, and its run finished if it starts one). */
  async accept(message: ChannelMessage, redelivered: boolean): Promise<void> {
    this.lastActivity = Date.now();
    const fresh = await this.deps.store.appendLog(toLogEntry(message));
    if (message.isMention && isStopCommand(message.text)) {
      await this.stop(`@${message.sender.username}`);
      return;
    }
    if (!message.isMention) return;
    if (!fresh && redelivered && (await this.alreadyAnswered(message.id))) return;
    await this.enqueue(message);
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
    const item: QueuedRun = { runId, message, publisher: new RunPublisher(this.deps.bus, this.deps.ref, runId, this.deps.log.child({ runId })) };
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
      return;
    }
    this.current = item;
    let outcome: RunOutcome;
    try {
      const agent = await this.getAgent();
      pub.emit({ type: "run_started", trigger: this.trigger(message), ...(message.replyTo !== undefined && { replyTo: message.replyTo }), model: agent.modelName });
      log.info("run started");
      const timer = setTimeout(() => void agent.abort(), this.deps.runTimeoutMs);
      try {
        outcome = await agent.run(this.runTrigger(message), (body) => pub.emit(body));
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
    if (outcome.finalText) {
      await this.deps.store.appendLog({
        id: `${runId}:reply`,
        date: new Date().toISOString(),
        user: "mom",
        userName: "mom",
        text: outcome.finalText,
        attachments: [],
        isBot: true,
        ...(message.replyTo !== undefined && { replyTo: message.replyTo }),
        runId,
        metadata: { triggerId: message.id },
      });
    }
    pub.emit(this.ended(outcome, message, started));
    log.info({ stopReason: outcome.stopReason, durationMs: Date.now() - started, tokens: outcome.usage.totalTokens }, "run ended");
    await pub.flushed();
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
