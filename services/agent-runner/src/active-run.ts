import type { ChannelMessage, Receipt } from "@mom/contracts";
import type { RunPublisher } from "./run-publisher.js";

/** What the parts acting inside a run (tool gate, attach, receipts note) need of it. */
export interface RunInProgress {
  runId: string;
  message: ChannelMessage;
  publisher: RunPublisher;
  /** This run's tool receipts so far (the gate appends them). */
  receipts: Receipt[];
  /** Who stopped the run (`@user`), once someone has. */
  cancelledBy?: string;
  /** Messages of this channel injected into the run while it ran (busy mode "steer"). */
  readonly steered?: readonly ChannelMessage[];
}

/**
 * The run a channel is executing now, if any. One per channel: its worker sets it for the length
 * of each run; the channel's tool gate, attach tool and receipts note read it.
 */
export class ActiveRun {
  current?: RunInProgress;
}
