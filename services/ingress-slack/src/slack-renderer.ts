import { type FileSource, FileTooLargeError } from "@mom/bus";
import type { OutboundEvent } from "@mom/contracts";
import { escapeMrkdwn, splitMessage } from "@mom/format";
import type { Logger } from "pino";
import { KeyedQueue } from "./keyed-queue.js";
import { isSlackTs } from "./slack-inbound.js";
import { finalBody, progressText, toolDetail, usageLine, WORKING } from "./slack-text.js";

type Body = OutboundEvent["event"];
type Ev<T extends Body["type"]> = Extract<Body, { type: T }>;

/** What the renderer needs of Slack (the Web API client implements it; tests may fake it). */
export interface SlackPoster {
  /** chat.postMessage (with Block Kit blocks when given; `text` is then the notification fallback); resolves with the new message's ts. */
  post(channel: string, text: string, threadTs?: string, blocks?: SlackBlock[]): Promise<string>;
  update(channel: string, ts: string, text: string, blocks?: SlackBlock[]): Promise<void>;
  delete(channel: string, ts: string): Promise<void>;
  /** files.uploadV2 into the channel (in the thread when threadTs is given). */
  upload(channel: string, file: { filename: string; title: string; bytes: Uint8Array }, threadTs?: string): Promise<void>;
  react(channel: string, ts: string, name: string, add: boolean): Promise<void>;
}

/** A Block Kit block, as JSON. */
export type SlackBlock = Record<string, unknown>;

/** An approval prompt on screen, for the button handler. */
export interface PendingApproval {
  channel: string;
  ts: string;
  threadTs?: string;
  text: string;
  approvers: string[];
}

export const APPROVAL_ALLOW = "mom_approval_allow";
export const APPROVAL_DENY = "mom_approval_deny";

export interface SlackRendererDeps {
  api: SlackPoster;
  files: FileSource;
  maxBytes: number;
  /** Markdown -> mrkdwn, `@username` -> `<@U…>`. */
  toMrkdwn: (markdown: string) => string;
  log: Logger;
  updateIntervalMs: number;
  messageLimit: number;
}

interface DetailMessage {
  ts?: string;
  text: string;
  dirty: boolean;
}

/** What one run looks like in Slack. */
interface RunView {
  runId: string;
  channel: string;
  /** Thread the run answers in (a mention inside a thread), else undefined: the channel. */
  replyTo?: string;
  triggerTs?: string;
  mainTs?: string;
  status: string;
  shownStatus?: string;
  /** Finished tool calls etc., in order; `reflected` of them are in `detailMessages`. */
  details: string[];
  reflected: number;
  detailMessages: DetailMessage[];
  toolArgs: Map<string, unknown>;
  timer?: NodeJS.Timeout;
  flushQueued: boolean;
  lastFlushAt: number;
  ended: boolean;
}

function newRunView(runId: string, channel: string, replyTo: string | undefined, extra: Partial<RunView> = {}): RunView {
  return {
    runId,
    channel,
    ...(replyTo && { replyTo }),
    status: WORKING,
    details: [],
    reflected: 0,
    detailMessages: [],
    toolArgs: new Map(),
    flushQueued: false,
    lastFlushAt: 0,
    ended: false,
    ...extra,
  };
}

const QUEUED_REACTION = "hourglass_flowing_sand";

/**
 * Renders a channel's outbound events in Slack, one main message per run:
 * - `run_started` posts it (`⏳ working…`); tool starts change it to `⏳ → label`; `run_ended`
 *   replaces it with the answer (split over several messages when long) and what went wrong.
 * - Finished tool calls (args, duration, result), retries and the usage line go into the thread
 *   under it, gathered into as few messages as fit.
 * - Edits are coalesced: at most one flush per run per `updateIntervalMs`, whatever the event rate.
 * - Every Slack call of a channel goes through one queue, so nothing is reordered; the Web API
 *   client waits out a 429's Retry-After and retries, so nothing is lost.
 * - `silent` runs leave nothing: the progress message and its thread are deleted.
 */
export class SlackRenderer {
  private readonly queue = new KeyedQueue();
  private readonly runs = new Map<string, RunView>();
  private readonly active = new Map<string, string>();
  private readonly queuedReactions = new Set<string>();
  private readonly approvals = new Map<string, PendingApproval>();
  private closed = false;

  constructor(private readonly deps: SlackRendererDeps) {}

  /** The run in progress in a channel, if this renderer saw it start. */
  currentRun(channel: string): string | undefined {
    return this.active.get(channel);
  }

  /**
   * Takes one event (in order per channel). Resolves when what it changes in Slack is done, or at
   * once for events that only change state (their Slack call is coalesced). Never rejects.
   */
  handle(channel: string, e: OutboundEvent): Promise<void> {
    try {
      return this.dispatch(channel, e).catch((err) => this.failed(err, channel, e));
    } catch (err) {
      this.failed(err, channel, e);
      return Promise.resolve();
    }
  }

  /** A pending approval prompt (who may decide, where it is), for the button handler. */
  approval(approvalId: string): PendingApproval | undefined {
    return this.approvals.get(approvalId);
  }

  /** Stops timers and waits for queued Slack calls. */
  async close(): Promise<void> {
    this.closed = true;
    for (const run of this.runs.values()) clearTimeout(run.timer);
    await this.queue.idle();
  }

  private failed(err: unknown, channel: string, e: OutboundEvent): void {
    this.deps.log.error({ err, channel, runId: e.runId, seq: e.seq, type: e.event.type }, `slack rendering failed: ${(err as Error)?.message ?? err}`);
  }

  private enqueue(channel: string, task: () => Promise<void>): Promise<void> {
    return this.queue.push(channel, task);
  }

  private async dispatch(channel: string, e: OutboundEvent): Promise<void> {
    const ev = e.event;
    switch (ev.type) {
      case "run_queued":
        return this.queued(channel, ev);
      case "run_rejected":
        return this.enqueue(channel, async () => {
          const text = `<@${ev.trigger.senderId}> ${this.deps.toMrkdwn(ev.text)}`;
          await this.deps.api.post(channel, text, ev.replyTo);
        });
      case "run_started":
        return this.started(channel, e.runId, ev);
      case "tool_execution_start": {
        const run = this.runs.get(e.runId);
        if (!run) return;
        run.toolArgs.set(ev.toolCallId, ev.args);
        run.status = `→ ${ev.label}`;
        return this.scheduleFlush(run);
      }
      case "tool_execution_end": {
        const run = this.runs.get(e.runId);
        if (!run) return;
        run.details.push(toolDetail(ev, run.toolArgs.get(ev.toolCallId)));
        run.toolArgs.delete(ev.toolCallId);
        run.status = WORKING;
        return this.scheduleFlush(run);
      }
      case "compaction_start":
        return this.setStatus(e.runId, "compacting context…");
      case "compaction_end": {
        const run = this.runs.get(e.runId);
        if (!run) return;
        if (ev.errorMessage) run.details.push(`:warning: compaction failed: ${escapeMrkdwn(ev.errorMessage)}`);
        run.status = WORKING;
        return this.scheduleFlush(run);
      }
      case "auto_retry_start": {
        const run = this.runs.get(e.runId);
        if (!run) return;
        run.details.push(`:repeat: provider error, retry ${ev.attempt}/${ev.maxAttempts} in ${Math.round(ev.delayMs / 1000)} s: ${escapeMrkdwn(firstLine(ev.errorMessage))}`);
        return this.scheduleFlush(run);
      }
      case "attachment":
        return this.enqueue(channel, () => this.attach(channel, e.runId, ev));
      case "approval_requested":
        return this.enqueue(channel, () => this.approvalRequested(channel, e.runId, ev));
      case "approval_resolved":
        return this.enqueue(channel, () => this.approvalResolved(e.runId, ev));
      case "run_ended":
        return this.ended(channel, e.runId, ev);
      default:
        return;
    }
  }

  private setStatus(runId: string, status: string): void {
    const run = this.runs.get(runId);
    if (!run) return;
    run.status = status;
    this.scheduleFlush(run);
  }

  private queued(channel: string, ev: Ev<"run_queued">): Promise<void> {
    const ts = ev.trigger.messageId;
    if (!isSlackTs(ts)) return Promise.resolve();
    return this.enqueue(channel, async () => {
      await this.deps.api.react(channel, ts, QUEUED_REACTION, true);
      this.queuedReactions.add(`${channel}:${ts}`);
    });
  }

  private started(channel: string, runId: string, ev: Ev<"run_started">): Promise<void> {
    const run = newRunView(runId, channel, ev.replyTo, isSlackTs(ev.trigger.messageId) ? { triggerTs: ev.trigger.messageId } : {});
    this.runs.set(runId, run);
    this.active.set(channel, runId);
    return this.enqueue(channel, async () => {
      const reaction = `${channel}:${run.triggerTs}`;
      if (run.triggerTs && this.queuedReactions.delete(reaction)) {
        await this.deps.api.react(channel, run.triggerTs, QUEUED_REACTION, false).catch((err) => this.deps.log.warn({ err, channel }, "could not remove the queued reaction"));
      }
      run.mainTs = await this.deps.api.post(channel, progressText(run.status), run.replyTo);
      run.shownStatus = run.status;
      run.lastFlushAt = Date.now();
    });
  }

  /** At most one flush per run per interval; a flush reads the latest state when it runs. */
  private scheduleFlush(run: RunView): void {
    if (run.timer || run.flushQueued || run.ended || this.closed) return;
    const delay = Math.max(0, run.lastFlushAt + this.deps.updateIntervalMs - Date.now());
    run.timer = setTimeout(() => {
      run.timer = undefined;
      if (run.ended || this.closed) return;
      run.flushQueued = true;
      void this.enqueue(run.channel, async () => {
        run.flushQueued = false;
        if (run.ended) return;
        run.lastFlushAt = Date.now();
        await this.flush(run);
      }).catch((err) => this.deps.log.error({ err, channel: run.channel, runId: run.runId }, "slack progress update failed"));
    }, delay);
  }

  private async flush(run: RunView): Promise<void> {
    if (!run.ended && run.mainTs && run.status !== run.shownStatus) {
      const status = run.status;
      await this.deps.api.update(run.channel, run.mainTs, progressText(status));
      run.shownStatus = status;
    }
    await this.flushDetails(run);
  }

  /** Appends new details to the last thread message while it has room, else starts another. */
  private async flushDetails(run: RunView): Promise<void> {
    const thread = run.replyTo ?? run.mainTs;
    if (!thread || run.reflected >= run.details.length) return;
    const limit = this.deps.messageLimit;
    for (const detail of run.details.slice(run.reflected)) {
      const piece = detail.length > limit ? `${detail.slice(0, limit - 1)}…` : detail;
      const last = run.detailMessages.at(-1);
      if (last && last.text.length + 2 + piece.length <= limit) {
        last.text += `\n\n${piece}`;
        last.dirty = true;
      } else run.detailMessages.push({ text: piece, dirty: true });
    }
    run.reflected = run.details.length;
    for (const m of run.detailMessages) {
      if (!m.dirty) continue;
      if (m.ts) await this.deps.api.update(run.channel, m.ts, m.text);
      else m.ts = await this.deps.api.post(run.channel, m.text, thread);
      m.dirty = false;
    }
  }

  private async attach(channel: string, runId: string, ev: Ev<"attachment">): Promise<void> {
    const run = this.runs.get(runId);
    const thread = ev.replyTo ?? run?.replyTo;
    const label = ev.title || ev.filename;
    let bytes: Uint8Array | undefined;
    try {
      bytes = await this.deps.files.getFile(ev.objectKey, { maxBytes: this.deps.maxBytes });
    } catch (err) {
      const why = err instanceof FileTooLargeError ? "it is larger than the attachment limit" : `it could not be read (${(err as Error).message})`;
      await this.deps.api.post(channel, `:warning: I could not share *${escapeMrkdwn(label)}*: ${why}.`, thread);
      return;
    }
    if (!bytes) {
      await this.deps.api.post(channel, `:warning: I could not share *${escapeMrkdwn(label)}*: the file is no longer available (it expired).`, thread);
      return;
    }
    await this.deps.api.upload(channel, { filename: ev.filename, title: label, bytes }, thread);
  }

  /** A tool call waits for a person: Allow once / Deny buttons in the run's thread, the approvers mentioned. */
  private async approvalRequested(channel: string, runId: string, ev: Ev<"approval_requested">): Promise<void> {
    const run = this.runs.get(runId);
    const thread = ev.replyTo ?? run?.replyTo ?? run?.mainTs;
    const who = ev.approvers.length ? ev.approvers.map((id) => `<@${id}>`).join(", ") : "nobody is configured (adapters.<name>.admins)";
    const expires = Math.floor(Date.parse(ev.expiresAt) / 1000);
    const deadline = Number.isFinite(expires) ? ` · no decision by <!date^${expires}^{time}|${ev.expiresAt.slice(11, 16)} UTC> means deny` : "";
    const text = [
      `:closed_lock_with_key: *Approval needed*: mom wants to run \`${escapeMrkdwn(ev.toolId)}\` (${ev.risk}), asked by ${this.deps.toMrkdwn(`@${ev.requestedBy.username}`)}`,
      "```\n" + escapeMrkdwn(clipText(ev.argsSummary, 1500)).replace(/```/g, "``\u200b`") + "\n```",
      `Who can decide: ${who}${deadline}`,
    ].join("\n");
    const blocks: SlackBlock[] = [
      { type: "section", text: { type: "mrkdwn", text } },
      {
        type: "actions",
        block_id: `mom_approval:${ev.approvalId}`.slice(0, 255),
        elements: [
          { type: "button", text: { type: "plain_text", text: "Allow once" }, style: "primary", action_id: APPROVAL_ALLOW, value: ev.approvalId },
          { type: "button", text: { type: "plain_text", text: "Deny" }, style: "danger", action_id: APPROVAL_DENY, value: ev.approvalId },
        ],
      },
    ];
    const ts = await this.deps.api.post(channel, text, thread, blocks);
    this.approvals.set(ev.approvalId, { channel, ts, text, approvers: ev.approvers, ...(thread && { threadTs: thread }) });
    if (run) {
      run.status = `⏸ waiting for approval to run ${ev.toolId}`;
      this.scheduleFlush(run);
    }
  }

  /** The prompt loses its buttons and says how it ended. */
  private async approvalResolved(runId: string, ev: Ev<"approval_resolved">): Promise<void> {
    const a = this.approvals.get(ev.approvalId);
    this.approvals.delete(ev.approvalId);
    const run = this.runs.get(runId);
    if (run) {
      run.status = WORKING;
      this.scheduleFlush(run);
    }
    if (!a) return;
    const by = ev.decidedBy ? ` by ${this.deps.toMrkdwn(ev.decidedBy)}` : "";
    const line = { approved: `:white_check_mark: Allowed once${by}.`, denied: `:no_entry_sign: Denied${by}.`, expired: ":hourglass: No decision in time: denied." }[ev.outcome];
    const text = `${a.text}\n${line}`;
    await this.deps.api.update(a.channel, a.ts, text, [{ type: "section", text: { type: "mrkdwn", text } }]);
  }

  private ended(channel: string, runId: string, ev: Ev<"run_ended">): Promise<void> {
    const run = this.runs.get(runId);
    if (run) {
      clearTimeout(run.timer);
      run.timer = undefined;
      run.ended = true;
    }
    return this.enqueue(channel, async () => {
      try {
        await this.finish(channel, ev, run);
      } finally {
        this.runs.delete(runId);
        if (this.active.get(channel) === runId) this.active.delete(channel);
      }
    });
  }

  private async finish(channel: string, ev: Ev<"run_ended">, run: RunView | undefined): Promise<void> {
    const { api } = this.deps;
    const replyTo = ev.replyTo ?? run?.replyTo;
    if (ev.silent) {
      if (run?.mainTs) await api.delete(channel, run.mainTs);
      for (const m of run?.detailMessages ?? []) if (m.ts) await api.delete(channel, m.ts);
      return;
    }
    const answer = ev.finalText ? this.deps.toMrkdwn(ev.finalText) : "";
    const chunks = splitMessage(finalBody(answer, ev), this.deps.messageLimit);
    const [first = "", ...rest] = chunks;
    let mainTs = run?.mainTs;
    if (mainTs) await api.update(channel, mainTs, first);
    else mainTs = await api.post(channel, first, replyTo);
    for (const chunk of rest) await api.post(channel, chunk, replyTo);
    const view = run ?? newRunView("", channel, replyTo, { mainTs, ended: true });
    view.mainTs = mainTs;
    view.details.push(usageLine(ev.usage, ev.durationMs));
    await this.flushDetails(view);
  }
}

function clipText(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function firstLine(text: string): string {
  const line = text.trim().split("\n")[0] ?? "";
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}
