import { isDeepStrictEqual } from "node:util";
import type { Delivery, FileSource } from "@mom/bus";
import { endSpan, metrics, SpanKind, startSpan } from "@mom/observability";
import { type OutboundEvent, REANNOUNCED_SEQ } from "@mom/contracts";
import type { Logger } from "pino";
import { ChannelQueue } from "./channel-queue.js";
import type { DeliveryReceipts } from "./delivery-receipts.js";
import type { Dialect } from "./dialect.js";
import type { DrawnRun, DrawnRuns } from "./drawn-runs.js";
import { approvalOutcomeLine, approvalPromptText } from "./notes.js";
import type { PostHandling } from "./posts.js";
import { RecentIds, RecentMap } from "./recent.js";
import { RunTracker } from "./run-tracker.js";
import type { Ev, RunView } from "./run-view.js";
import { type FileOutcome, fetchSharedFile } from "./shared-files.js";

/**
 * How one platform lays a run out. The Presenter decides when (ordering, coalescing, duplicates,
 * runs it never saw start, approvals, files); a Layout decides only where things go. `S` is what
 * the layout remembers of a run (its message ids).
 */
export interface Layout<S, P = unknown> {
  dialect: Dialect;
  /** `run_started`: show that the run began (a progress message). */
  open(channel: string, view: RunView): Promise<S>;
  /** The run's state changed; called at most once per `editIntervalMs` per run. */
  progress(channel: string, view: RunView, state: S): Promise<void>;
  /**
   * `run_ended` (view.end is set). `files` are the outcomes not yet delivered through `file`.
   * Resolves with the platform's ids of the messages that carry the answer (for its delivery receipt).
   * An answer of several messages: `parts.sent` is told the ids after each but the last, and
   * `parts.done` holds those an earlier process sent before it died (not sent again).
   */
  finish(channel: string, view: RunView, state: S | undefined, files: FileOutcome[], parts?: AnswerParts): Promise<string[] | void>;
  /**
   * A `post` (the send tool of another channel, admitted by the ingress): posts the message as
   * mom (postText) and its file; resolves with the platform's ids of the messages carrying it.
   */
  post(channel: string, ev: Ev<"post">, files: FileOutcome[]): Promise<string[]>;
  /** When present, each shared file is delivered as it comes rather than with the answer. */
  file?(channel: string, view: RunView, state: S | undefined, f: FileOutcome): Promise<void>;
  /**
   * Tells the trigger's sender their run waits; resolves with where that notice is (plain JSON,
   * kept on the bus with `drawn`). `shown`: such a form of a notice an earlier process put up for
   * this very event (its redelivery): taken over, nothing posted.
   */
  queued?(channel: string, ev: Ev<"run_queued">, shown?: unknown): Promise<unknown>;
  rejected(channel: string, ev: Ev<"run_rejected">): Promise<void>;
  /** Posts an approval prompt (`text`) with Allow once / Deny; resolves with where it is (plain JSON: with `drawn` it is kept on the bus for the process after this one). */
  prompt(channel: string, view: RunView, state: S | undefined, ev: Ev<"approval_requested">, text: string): Promise<P>;
  /** The prompt loses its buttons and reads `text` (the prompt and how it ended). */
  resolvePrompt(channel: string, prompt: P, text: string): Promise<void>;
  /** How the platform writes an approval's expiry, after "no decision". */
  deadline?(expiresAt: string): string;
  /** Shows "typing…" in the run's conversation (renewed every `typingIntervalMs`). */
  typing?(channel: string, view: RunView): Promise<void>;
  /**
   * The run's state as a small JSON value that another process can go on from (`resume`): the ids
   * of the messages it would still edit (the progress message), nothing the run's events rebuild.
   * Undefined: nothing to go on from (no message shown). Recorded on the bus once `open` resolved
   * (PresenterOptions.drawn), so that a process started after a crash edits the run's progress
   * message into its answer rather than posting the answer anew.
   */
  resumeForm?(state: S): unknown;
  /** The state of a run another process opened, from its `resumeForm`; undefined when the form is not one this layout made. */
  resume?(form: unknown): S | undefined;
}

/** The messages of a long answer already on the platform, kept on the bus as they are sent (Layout.finish). */
export interface AnswerParts {
  done: readonly string[];
  sent(ids: string[]): Promise<void>;
}

/** An approval prompt on screen, for the button handler (ingress kit `decideApproval`). */
export interface PendingApproval<P = unknown> {
  channel: string;
  approvers: string[];
  text: string;
  /** Where the prompt is, once posted. */
  prompt?: P;
}

export interface PresenterOptions {
  files: Pick<FileSource, "getFile">;
  maxBytes: number;
  log: Logger;
  editIntervalMs: number;
  typingIntervalMs?: number;
  /** Where each answer's delivery (accepted by the platform, or refused) is recorded. */
  deliveries?: DeliveryReceipts;
  /** Whether a post from another channel may go out, and its record; without it every post is refused. */
  posts?: PostHandling;
  /** The run's page on the web console (console.publicUrl set): answers with tool activity link to it ("receipt links"). */
  runUrl?: (channel: string, runId: string) => string;
  /**
   * Where each run's progress message (the layout's `resumeForm`) and delivered answer are kept on
   * the bus, and read back for a run this process meets without having drawn its start: its
   * progress message is edited into the answer, and an answer already delivered is not drawn again.
   */
  drawn?: DrawnRuns;
}

/** How an event reached the presenter. */
export interface Arrival {
  /** JetStream delivered it before (to this process or to one that died holding it): what it shows may be on the platform already. */
  redelivered?: boolean;
}

interface LiveRun<S> {
  channel: string;
  view: RunView;
  state?: S;
  timer?: NodeJS.Timeout;
  flushQueued: boolean;
  lastFlushAt: number;
  typing?: NodeJS.Timeout;
  delivered: number;
  /** An earlier process delivered the run's answer (its ids): nothing more of it is drawn. */
  answered?: string[];
  /** What is on the platform of the run, as kept on the bus (PresenterOptions.drawn). */
  drawn: DrawnRun;
}

const TYPING_MAX_MS = 60 * 60_000;
/** Events after which the run looks different. */
const REDRAW = new Set(["tool_execution_start", "tool_execution_update", "tool_execution_end", "compaction_start", "compaction_end", "auto_retry_start", "approval_requested", "approval_resolved"]);

/**
 * Draws a channel's outbound events through a Layout:
 * - every platform call of a channel goes through one queue, so nothing is reordered;
 * - duplicates and late events are dropped, and runs it never saw start still get their answer
 *   (RunTracker);
 * - progress is redrawn at most once per `editIntervalMs` per run, whatever the event rate, and
 *   reads the latest view when it runs;
 * - approval prompts and their outcome line, and shared files (too large, expired) are worded once;
 * - with `drawn`, each run's progress message and delivered answer are kept on the bus, so a process
 *   after this one (a crash, a restart mid-run) edits that message into the answer, and does not
 *   draw again an answer, post or refusal already on the platform. The bucket is never waited on
 *   for long: without it, drawing goes on as it would without `drawn`.
 * `handle` never rejects: a failed platform call is logged and the next event goes on.
 */
export class Presenter<S, P = unknown> {
  private readonly queue = new ChannelQueue();
  private readonly tracker = new RunTracker();
  private readonly live = new Map<string, LiveRun<S>>();
  private readonly approvals = new Map<string, PendingApproval<P>>();
  /** Prompts of before a restart that a decision named (`recall`: a click, a reaction, a typed code's reply), closed once resolved. */
  private readonly recalled = new RecentMap<{ prompt: P; text?: string }>(1000);
  private readonly posted = new RecentIds(5000);
  private readonly rejections = new RecentIds(5000);
  private closed = false;

  constructor(
    private readonly layout: Layout<S, P>,
    private readonly opts: PresenterOptions,
  ) {}

  /** Applies one event after the earlier ones of its channel; resolves when it is applied (false: it failed, and was logged). */
  handle(channel: string, e: OutboundEvent, arrival: Arrival = {}): Promise<boolean> {
    return this.queue.push(channel, () => this.apply(channel, e, arrival)).then(
      () => true,
      (err: unknown) => {
        this.failed(err, channel, e);
        return false;
      },
    );
  }

  get dialect(): Dialect {
    return this.layout.dialect;
  }

  /** A pending approval prompt (who may decide, where it is). */
  approval(approvalId: string): PendingApproval<P> | undefined {
    return this.approvals.get(approvalId);
  }

  /**
   * A prompt this process did not post (before a restart) that a decision named: it is closed with
   * the outcome when the approval resolves, like the prompts posted here (with the outcome line
   * alone when its text is not known).
   */
  recall(approvalId: string, prompt: { ref: unknown; text?: string }): void {
    if (this.approvals.has(approvalId)) return;
    this.recalled.set(approvalId, { prompt: prompt.ref as P, ...(prompt.text !== undefined && { text: prompt.text }) });
  }

  /**
   * Stops timers and waits for queued platform calls. A redraw still waiting out the edit interval
   * is made now: the events it shows were acked when handled, and the next process does not know
   * the run's message, so a dropped redraw would leave the run shown as it was before them.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const [runId, r] of this.live) {
      const pending = r.timer !== undefined;
      this.stopTimers(r);
      if (pending) this.flush(runId, r);
    }
    await this.queue.idle();
  }

  private failed(err: unknown, channel: string, e: OutboundEvent): void {
    this.opts.log.error({ err, channel, runId: e.runId, seq: e.seq, type: e.event.type }, `rendering failed: ${(err as Error)?.message ?? err}`);
  }

  private async apply(channel: string, e: OutboundEvent, arrival: Arrival): Promise<void> {
    const ev = e.event;
    // A rejection is about a message: it has a run id of its own that never starts.
    // Once: a redelivery (an ack lost in a NATS failover) must not post the refusal again.
    if (ev.type === "run_rejected") return this.rejections.add(e.runId) ? this.rejected(channel, e, ev, arrival) : undefined;
    // So is a post: one event, never a run of this channel.
    if (ev.type === "post") return this.post(channel, e, ev, arrival);
    const accepted = this.tracker.accept(e);
    if (!accepted) return;
    const { view } = accepted;
    if (ev.type === "run_queued") return this.queued(channel, e, ev, arrival);
    let run = this.live.get(e.runId);
    if (!run) {
      run = { channel, view, flushQueued: false, lastFlushAt: 0, delivered: 0, drawn: {} };
      this.live.set(e.runId, run);
      // A run met without drawing its start here: it began in a process that died or stopped (or
      // this start was delivered to one before, or is a new runner's announcement of it again).
      // What that process put on the platform is on the bus.
      if (ev.type !== "run_started" || arrival.redelivered || e.seq >= REANNOUNCED_SEQ) this.resume(run, await this.drawnBefore(e.runId));
    }
    run.view = view;
    if (run.answered) {
      // Drawn in full by a process before this one: its receipt again (the same msg-id: once on the bus), nothing on the platform.
      if (ev.type === "run_ended") {
        this.stopTimers(run);
        this.live.delete(e.runId);
        this.opts.log.info({ channel, runId: e.runId, ids: run.answered }, "run's answer already delivered by an earlier process: not drawn again");
        if (!ev.silent) await this.opts.deliveries?.succeeded(channel, e.runId, ev.finalText, run.answered);
      }
      return;
    }
    switch (ev.type) {
      case "run_started":
        // Opened by an earlier process: its progress message goes on being edited.
        if (run.state === undefined) {
          run.state = await this.layout.open(channel, view);
          await this.keepForm(e.runId, run);
        }
        run.lastFlushAt = Date.now();
        this.startTyping(run);
        return;
      case "attachment":
        if (this.layout.file) {
          run.delivered = view.files.length;
          await this.layout.file(channel, view, run.state, await this.fetch(ev));
          await this.keepForm(e.runId, run);
        }
        return;
      case "approval_requested": {
        const text = approvalPromptText(ev, this.layout.dialect, this.layout.deadline?.bind(this.layout));
        // Known before the prompt is up: a click can arrive before the platform answers the post.
        const pending: PendingApproval<P> = { channel, approvers: ev.approvers, text };
        this.approvals.set(ev.approvalId, pending);
        // Posted by an earlier process (this is its redelivery): that prompt is the one to close.
        const shown = run.drawn.prompts?.[ev.approvalId];
        if (shown !== undefined) pending.prompt = shown as P;
        else {
          pending.prompt = await this.layout.prompt(channel, view, run.state, ev, text);
          await this.remember(e.runId, run, { prompts: { ...run.drawn.prompts, [ev.approvalId]: pending.prompt } });
          await this.keepForm(e.runId, run);
        }
        break;
      }
      case "approval_resolved": {
        const a = this.approvals.get(ev.approvalId);
        this.approvals.delete(ev.approvalId);
        const outcome = approvalOutcomeLine(ev, this.layout.dialect);
        if (a?.prompt !== undefined) await this.layout.resolvePrompt(a.channel, a.prompt, `${a.text}\n${outcome}`);
        else if (!a) {
          const recalled = this.recalled.get(ev.approvalId);
          this.recalled.delete(ev.approvalId);
          if (recalled) await this.layout.resolvePrompt(channel, recalled.prompt, recalled.text ? `${recalled.text}\n${outcome}` : outcome);
        }
        break;
      }
      case "run_ended": {
        this.stopTimers(run);
        this.live.delete(e.runId);
        const files: FileOutcome[] = [];
        for (const f of view.files.slice(run.delivered)) files.push(await this.fetch(f));
        const deliveries = ev.silent ? undefined : this.opts.deliveries;
        const receiptsUrl = ev.toolActivity?.length ? this.opts.runUrl?.(channel, e.runId) : undefined;
        const shown = receiptsUrl ? { ...view, end: { ...view.end!, receiptsUrl } } : view;
        let ids: string[] | void;
        try {
          const parts = { done: run.drawn.answering ?? [], sent: (ids: string[]) => this.remember(e.runId, run!, { answering: ids }) };
          ids = await this.layout.finish(channel, shown, run.state, files, parts);
        } catch (err) {
          await deliveries?.failed(channel, e.runId, ev.finalText, (err as Error)?.message ?? String(err));
          throw err;
        }
        // On the bus before its receipt: the record is what a later process goes by.
        await this.opts.drawn?.write(e.runId, { answered: ids ?? [] });
        await deliveries?.succeeded(channel, e.runId, ev.finalText, ids ?? []);
        return;
      }
      default:
        break;
    }
    if (REDRAW.has(ev.type)) this.scheduleProgress(e.runId, run);
  }

  /** What an earlier process drew of a run (or a post, a refusal); undefined without the bus's record. */
  private async drawnBefore(id: string): Promise<DrawnRun | undefined> {
    return this.opts.drawn?.read(id);
  }

  /**
   * Records the layout's resume form of the run when it changed (the progress message posted anew,
   * a details thread started), so that the process after this one goes on where this one is.
   */
  private async keepForm(runId: string, run: LiveRun<S>): Promise<void> {
    const form = run.state === undefined ? undefined : this.layout.resumeForm?.(run.state);
    if (form !== undefined && !isDeepStrictEqual(form, run.drawn.progress)) await this.remember(runId, run, { progress: form });
  }

  /** Adds to the run's record on the bus what has just been put on the platform. */
  private async remember(runId: string, run: LiveRun<S>, drawn: DrawnRun): Promise<void> {
    run.drawn = { ...run.drawn, ...drawn };
    await this.opts.drawn?.write(runId, run.drawn);
  }

  /** A run another process began: its answer is delivered (nothing more to draw), or its progress message and prompts are taken over. */
  private resume(run: LiveRun<S>, drawn: DrawnRun | undefined): void {
    if (!drawn) return;
    run.drawn = drawn;
    if (drawn.answered) {
      run.answered = drawn.answered;
      return;
    }
    if (drawn.progress === undefined || !this.layout.resume) return;
    const state = this.layout.resume(drawn.progress);
    if (state !== undefined) {
      run.state = state;
      this.opts.log.info({ channel: run.channel, runId: run.view.runId }, "run opened by an earlier process: going on with its progress message");
    } else this.opts.log.warn({ channel: run.channel, runId: run.view.runId }, "an earlier process's record of the run is not this layout's: drawing it anew");
  }

  /** A "queued" notice, once: one an earlier process put up before it died is taken over (its redelivery). */
  private async queued(channel: string, e: OutboundEvent, ev: Ev<"run_queued">, arrival: Arrival): Promise<void> {
    if (!this.layout.queued) return;
    const shown = arrival.redelivered ? (await this.drawnBefore(e.runId))?.queued : undefined;
    const form = await this.layout.queued(channel, ev, shown);
    if (shown === undefined && form !== undefined) await this.opts.drawn?.write(e.runId, { queued: form });
  }

  /** A busy refusal, once: not again when an earlier process posted it before it died (its redelivery). */
  private async rejected(channel: string, e: OutboundEvent, ev: Ev<"run_rejected">, arrival: Arrival): Promise<void> {
    if (arrival.redelivered && (await this.drawnBefore(e.runId))?.answered) return;
    await this.layout.rejected(channel, ev);
    await this.opts.drawn?.write(e.runId, { answered: [] });
  }

  /**
   * A post from another channel, once: refused (a `delivery.failed` saying why) unless the
   * ingress admits it; else drawn, recorded as delivered (or not), and its record published.
   * A redelivered one an earlier process posted is recorded again (the same msg-ids), not posted.
   */
  private async post(channel: string, e: OutboundEvent, ev: Ev<"post">, arrival: Arrival): Promise<void> {
    if (!this.posted.add(e.runId)) return;
    const deliveries = this.opts.deliveries;
    const before = arrival.redelivered ? (await this.drawnBefore(e.runId))?.answered : undefined;
    if (before) {
      await deliveries?.succeeded(channel, e.runId, ev.text, before);
      await this.opts.posts?.record(channel, e, ev, before);
      return;
    }
    const refusal = this.opts.posts ? await this.opts.posts.admit(channel, ev) : "this ingress does not post messages from other channels";
    if (refusal) {
      this.opts.log.warn({ channel, postId: e.runId, from: ev.from, requestedBy: ev.requestedBy }, `post refused: ${refusal}`);
      await deliveries?.failed(channel, e.runId, ev.text, `not posted: ${refusal}`);
      return;
    }
    const files = ev.file ? [await this.fetch({ type: "attachment", ...ev.file })] : [];
    let ids: string[];
    try {
      ids = await this.layout.post(channel, ev, files);
    } catch (err) {
      await deliveries?.failed(channel, e.runId, ev.text, (err as Error)?.message ?? String(err));
      throw err;
    }
    await this.opts.drawn?.write(e.runId, { answered: ids });
    await deliveries?.succeeded(channel, e.runId, ev.text, ids);
    await this.opts.posts!.record(channel, e, ev, ids);
  }

  private fetch(ev: Ev<"attachment">): Promise<FileOutcome> {
    return fetchSharedFile(this.opts.files, ev, this.opts.maxBytes, this.layout.dialect);
  }

  /** At most one redraw per run per interval; it reads the latest view when it runs. */
  private scheduleProgress(runId: string, run: LiveRun<S>): void {
    if (run.timer || run.flushQueued || run.state === undefined || this.closed) return;
    const delay = Math.max(0, run.lastFlushAt + this.opts.editIntervalMs - Date.now());
    run.timer = setTimeout(() => {
      run.timer = undefined;
      if (!this.live.has(runId) || this.closed) return;
      this.flush(runId, run);
    }, delay);
  }

  /** Queues the run's redraw behind its channel's calls; it reads the latest view when it runs. */
  private flush(runId: string, run: LiveRun<S>): void {
    run.flushQueued = true;
    void this.queue
      .push(run.channel, async () => {
        run.flushQueued = false;
        if (!this.live.has(runId)) return;
        run.lastFlushAt = Date.now();
        await this.layout.progress(run.channel, run.view, run.state as S);
        await this.keepForm(runId, run);
      })
      .catch((err: unknown) => this.opts.log.error({ err, channel: run.channel, runId }, "progress update failed"));
  }

  private startTyping(run: LiveRun<S>): void {
    const typing = this.layout.typing?.bind(this.layout);
    if (!typing || !this.opts.typingIntervalMs) return;
    const until = Date.now() + TYPING_MAX_MS;
    const beat = () => {
      if (Date.now() > until) return this.stopTimers(run);
      typing(run.channel, run.view).catch((err: unknown) => this.opts.log.debug({ err }, "typing indicator failed"));
    };
    beat();
    run.typing = setInterval(beat, this.opts.typingIntervalMs);
    run.typing.unref();
  }

  private stopTimers(run: LiveRun<S>): void {
    clearTimeout(run.timer);
    clearInterval(run.typing);
    run.timer = undefined;
    run.typing = undefined;
  }
}

/**
 * Renders one outbound event with its metrics and, for an answer (a run's end, a busy reply), a
 * `mom.ingress.render` span under the run's trace (the event's `traceparent`). `render` resolves
 * false when the platform call failed.
 */
export async function observeRendering(adapter: string, d: Delivery<OutboundEvent>, render: () => Promise<boolean | void>): Promise<void> {
  const ev = d.data.event;
  const answer = (ev.type === "run_ended" && !ev.silent) || ev.type === "run_rejected" || ev.type === "post";
  const span = answer ? startSpan("mom.ingress.render", { parent: d.traceparent, kind: SpanKind.CONSUMER, attributes: { "mom.adapter": adapter, "mom.run_id": d.data.runId, "mom.event": ev.type } }) : undefined;
  const ok = (await render()) !== false;
  if (!ok) metrics.platformErrors.inc({ adapter });
  else if (answer) metrics.messagesOut.inc({ adapter });
  endSpan(span, ok ? undefined : "rendering failed");
}
