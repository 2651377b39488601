import type { OutboundEvent } from "@mom/contracts";
import { RecentIds } from "./recent.js";
import { reduceRun, type RunView } from "./run-view.js";

/**
 * The one place that decides which outbound events an adapter draws:
 * - an event whose seq is not above the last one folded into its run is a duplicate (a redelivery)
 *   and is dropped;
 * - events of a run that already ended are dropped;
 * - a run whose `run_started` this process never saw (it started mid-run) still gets a view on its
 *   first event, so its progress and answer are shown.
 */
export class RunTracker {
  private readonly runs = new Map<string, RunView>();
  private readonly ended = new RecentIds(5000);

  /** The view after `e`, or undefined when `e` is to be dropped. */
  accept(e: OutboundEvent): { view: RunView; before?: RunView } | undefined {
    if (this.ended.has(e.runId)) return undefined;
    const before = this.runs.get(e.runId);
    if (before && e.seq <= before.lastSeq) return undefined;
    const view = reduceRun(before, e);
    if (e.event.type === "run_ended") {
      this.runs.delete(e.runId);
      this.ended.add(e.runId);
    } else this.runs.set(e.runId, view);
    return { view, ...(before && { before }) };
  }

  get(runId: string): RunView | undefined {
    return this.runs.get(runId);
  }
}
