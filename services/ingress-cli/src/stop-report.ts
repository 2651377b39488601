import { clip, type Dialect, type OutboundEvent } from "@mom/ingress-sdk";

/**
 * What one `stop` did in a chat, said in one line once the runs it cut short have ended: "stop:
 * aborted the run; 2 queued messages cancelled". The runner aborts the running run and cancels
 * the queued ones, each ending on its own, so the line can only be told from their ends. A
 * surface that draws every event (an EventSurface) feeds it the chat's events once each, after a
 * RunTracker dropped redeliveries, and calls `sent()` when a stop went out; `say` gets the line.
 */
export class StopReport {
  /** Runs of the chat queued or running, as far as the events said: what each was asked. */
  private readonly known = new Map<string, { text: string; started: boolean }>();
  private stopping?: { waiting: Set<string>; aborted: number; cancelled: number; timer: NodeJS.Timeout };

  constructor(
    private readonly dialect: Dialect,
    private readonly say: (line: string) => void,
  ) {}

  /**
   * Follows one event of the chat. For the end of a run cancelled before it started, returns the
   * line naming its message (`■ cancelled before it started: “…” (cancelled by @ana)`), to show
   * instead of the run's usual end. The report is said after the surface drew the last end it
   * waited for (a microtask later).
   */
  seen(e: OutboundEvent): string | undefined {
    const ev = e.event;
    if (ev.type === "run_queued" || ev.type === "run_started") this.known.set(e.runId, { text: ev.trigger.text, started: ev.type === "run_started" });
    if (ev.type !== "run_ended") return undefined;
    const run = this.known.get(e.runId);
    this.known.delete(e.runId);
    const cancelled = ev.stopReason === "aborted" && run !== undefined && !run.started;
    const stop = this.stopping;
    if (stop?.waiting.delete(e.runId)) {
      if (cancelled) stop.cancelled++;
      else if (ev.stopReason === "aborted") stop.aborted++;
      if (stop.waiting.size === 0) queueMicrotask(() => this.report());
    }
    if (!cancelled) return undefined;
    const why = ev.errorMessage ? ` (${this.dialect.escape(ev.errorMessage.replace(/ before it started$/, ""))})` : "";
    return `${this.dialect.marks.stopped} cancelled before it started: “${this.dialect.escape(clip(run.text.replace(/\s+/g, " ").trim(), 60))}”${why}`;
  }

  /** A `stop` was sent: the report waits for the runs queued or running now (or, none known, a moment for one starting). */
  sent(): void {
    if (this.stopping) return;
    const waiting = new Set(this.known.keys());
    const timer = setTimeout(() => this.report(), waiting.size ? 15_000 : 3_000);
    timer.unref();
    this.stopping = { waiting, aborted: 0, cancelled: 0, timer };
  }

  close(): void {
    clearTimeout(this.stopping?.timer);
    this.stopping = undefined;
  }

  private report(): void {
    const s = this.stopping;
    if (!s) return;
    this.close();
    const queued = s.cancelled ? `${s.cancelled} queued message${s.cancelled === 1 ? "" : "s"} cancelled` : "nothing was queued";
    this.say(`stop: ${s.aborted ? "aborted the run" : "no run was running"}; ${queued}`);
  }
}
