import { type OutboundEvent, REANNOUNCED_SEQ } from "@mom/contracts";
import { type ApprovalClick, approvalPromptText, type Arrival, ChannelQueue, type DeliveryReceipts, type Dialect, type DrawnRuns, type PendingApproval, type PostHandling, RecentIds, RecentMap } from "@mom/render";
import type { Logger } from "pino";
import type { EventSurface } from "./platform.js";

/**
 * What the shell draws runs through: the Presenter for chat surfaces and layouts, this for an
 * EventSurface. Both apply a channel's events in order, never reject, and know the prompts shown.
 */
export interface RunDrawing {
  readonly dialect: Dialect;
  handle(channel: string, event: OutboundEvent, arrival?: Arrival): Promise<boolean>;
  approval(approvalId: string): PendingApproval | undefined;
  /** A prompt of before a restart that a click named, to close when it resolves (ApprovalClick.prompt). */
  recall?(approvalId: string, prompt: NonNullable<ApprovalClick["prompt"]>): void;
  close(): Promise<void>;
}

/**
 * Hands every event to an EventSurface as it comes, one at a time per channel. The shell's part
 * stays the same as with the Presenter: approval prompts remembered until resolved (who may
 * decide), each answer's delivery recorded, a failed platform call logged and the channel going on.
 * A surface written rather than edited has no message to go on from: of a run only "its answer
 * was delivered" is kept on the bus (`drawn`), so that an answer (or a busy refusal, a queued
 * line) an earlier process drew before it died is not drawn again when its events come to this one.
 */
export class EventDrawing implements RunDrawing {
  private readonly queue = new ChannelQueue();
  private readonly approvals = new Map<string, PendingApproval>();
  private readonly posted = new RecentIds(5000);
  /** Runs met here, and those an earlier process answered (their ids). */
  private readonly runs = new RecentMap<{ answered?: string[] }>(5000);

  constructor(
    private readonly surface: EventSurface,
    private readonly o: { log: Logger; deliveries?: DeliveryReceipts; posts?: PostHandling; drawn?: DrawnRuns },
  ) {}

  get dialect(): Dialect {
    return this.surface.dialect;
  }

  approval(approvalId: string): PendingApproval | undefined {
    return this.approvals.get(approvalId);
  }

  handle(channel: string, e: OutboundEvent, arrival: Arrival = {}): Promise<boolean> {
    return this.queue.push(channel, () => this.apply(channel, e, arrival)).then(
      () => true,
      (err: unknown) => {
        this.o.log.error({ err, channel, runId: e.runId, seq: e.seq, type: e.event.type }, `rendering failed: ${(err as Error)?.message ?? err}`);
        return false;
      },
    );
  }

  async close(): Promise<void> {
    await this.queue.idle();
  }

  private async apply(channel: string, e: OutboundEvent, arrival: Arrival): Promise<void> {
    const ev = e.event;
    if (ev.type === "post") return this.post(channel, e, ev, arrival);
    // A refusal or a queued line written by an earlier process before it died: not written again.
    // (A queued run starts later under the same id: its line is recorded as `queued`, not as its answer.)
    const notice = ev.type === "run_rejected" || ev.type === "run_queued";
    const before = notice && arrival.redelivered ? await this.o.drawn?.read(e.runId) : undefined;
    if (ev.type === "run_rejected" ? before?.answered : before?.queued) return;
    if (!notice) {
      let run = this.runs.get(e.runId);
      if (!run) {
        // Met without its start (or its start came again, or a new runner announced it again): an
        // earlier process may have drawn it whole.
        const drawn = ev.type !== "run_started" || arrival.redelivered || e.seq >= REANNOUNCED_SEQ ? await this.o.drawn?.read(e.runId) : undefined;
        run = drawn?.answered ? { answered: drawn.answered } : {};
        this.runs.set(e.runId, run);
      }
      if (run.answered) {
        if (ev.type === "run_ended" && !ev.silent) await this.o.deliveries?.succeeded(channel, e.runId, ev.finalText, run.answered);
        return;
      }
    }
    // Known before the surface shows it: the person may answer as soon as it is on screen.
    if (ev.type === "approval_requested") this.approvals.set(ev.approvalId, { channel, approvers: ev.approvers, text: approvalPromptText(ev, this.dialect) });
    if (ev.type === "approval_resolved") this.approvals.delete(ev.approvalId);
    const answer = ev.type === "run_ended" && !ev.silent ? ev : undefined;
    let ids: string[] | void;
    try {
      ids = await this.surface.drawEvent(channel, e);
    } catch (err) {
      if (answer) await this.o.deliveries?.failed(channel, e.runId, answer.finalText, (err as Error)?.message ?? String(err));
      throw err;
    }
    if (ev.type === "run_ended" || ev.type === "run_rejected") await this.o.drawn?.write(e.runId, { answered: ids ?? [] });
    if (ev.type === "run_queued") await this.o.drawn?.write(e.runId, { queued: true });
    if (answer) await this.o.deliveries?.succeeded(channel, e.runId, answer.finalText, ids ?? []);
  }

  /** A post from another channel, once, as the Presenter takes one: admitted, drawn, delivered, recorded. */
  private async post(channel: string, e: OutboundEvent, ev: Extract<OutboundEvent["event"], { type: "post" }>, arrival: Arrival): Promise<void> {
    if (!this.posted.add(e.runId)) return;
    const before = arrival.redelivered ? (await this.o.drawn?.read(e.runId))?.answered : undefined;
    if (before) {
      await this.o.deliveries?.succeeded(channel, e.runId, ev.text, before);
      await this.o.posts?.record(channel, e, ev, before);
      return;
    }
    const refusal = this.o.posts ? await this.o.posts.admit(channel, ev) : "this ingress does not post messages from other channels";
    if (refusal) {
      this.o.log.warn({ channel, postId: e.runId, from: ev.from, requestedBy: ev.requestedBy }, `post refused: ${refusal}`);
      await this.o.deliveries?.failed(channel, e.runId, ev.text, `not posted: ${refusal}`);
      return;
    }
    let ids: string[] | void;
    try {
      ids = await this.surface.drawEvent(channel, e);
    } catch (err) {
      await this.o.deliveries?.failed(channel, e.runId, ev.text, (err as Error)?.message ?? String(err));
      throw err;
    }
    await this.o.drawn?.write(e.runId, { answered: ids ?? [] });
    await this.o.deliveries?.succeeded(channel, e.runId, ev.text, ids ?? []);
    await this.o.posts!.record(channel, e, ev, ids ?? []);
  }
}
