/**
 * Where each channel this runner holds is in its life here, in exactly one state:
 *
 *   (none) ──own──▶ owned ──drain──▶ draining ──forget──▶ (none)     hand-over at a run boundary
 *                     │                 │
 *                     ├──stop───────────┴──▶ stopping ──forget──▶ (none)   lost, or restarted
 *                     └──setDown────────┴──▶ down ──forget──▶ (none)        heartbeats not landing
 *
 * - owned: its feed and worker run here.
 * - draining: being handed over; still read (so a typed `stop` reaches the run) until its run ends.
 * - stopping: lost to another runner or restarted; its worker is being fenced and disposed.
 * - down: set down while this runner could not reach NATS; taken back if the record still names it.
 *
 * The channel's worker and its write fence read the state from here (ChannelSlot): a worker does
 * not keep a lifecycle of its own that could disagree (draining ⇒ it starts no new run; stopping or
 * down ⇒ it writes nothing more).
 *
 * A channel in any state is never started a second time here (two workers, two pi sessions on one
 * set of files). Every transition checks where it starts from, so views that disagree (a handover
 * racing a loss, a set-down racing a restart) cannot leave a channel in two places.
 */
export type ChannelState = "owned" | "draining" | "stopping" | "down";

/**
 * One channel's place in this runner, as the parts running it see it (the worker, the write fence):
 * they read the state, only ChannelSlots changes it. Undefined once the channel is let go of, so a
 * part of an earlier tenure never reads the state of the channel taken again.
 */
export interface ChannelSlot {
  readonly state: ChannelState | undefined;
}

export class ChannelSlots<C> {
  private readonly slots = new Map<string, { state: ChannelState | undefined; channel: C }>();

  state(key: string): ChannelState | undefined {
    return this.slots.get(key)?.state;
  }

  /** Held in any state: not to be started again here until it is forgotten. */
  holds(key: string): boolean {
    return this.slots.has(key);
  }

  /** The channel while it runs here (owned or draining). */
  active(key: string): C | undefined {
    const s = this.slots.get(key);
    return s && (s.state === "owned" || s.state === "draining") ? s.channel : undefined;
  }

  /** Channels in the given states (default: the ones running here). */
  entries(...states: ChannelState[]): Array<[string, C]> {
    const want: ChannelState[] = states.length ? states : ["owned", "draining"];
    return [...this.slots].filter(([, s]) => s.state !== undefined && want.includes(s.state)).map(([k, s]) => [k, s.channel]);
  }

  /** How many channels run here (owned or draining): the load a heartbeat reports. */
  get activeCount(): number {
    let n = 0;
    for (const s of this.slots.values()) if (s.state === "owned" || s.state === "draining") n++;
    return n;
  }

  /** (none) → owned, with the channel made for this tenure (it may keep the slot to read its state). */
  own(key: string, make: (slot: ChannelSlot) => C): C {
    if (this.slots.has(key)) throw new Error(`channel ${key} is already ${this.slots.get(key)!.state} here`);
    const slot = { state: "owned" as ChannelState | undefined, channel: undefined as unknown as C };
    slot.channel = make(slot);
    this.slots.set(key, slot);
    return slot.channel;
  }

  /** owned → draining; the channel, or undefined when it is not owned. */
  drain(key: string): C | undefined {
    return this.move(key, ["owned"], "draining");
  }

  /** owned | draining → stopping; the channel, or undefined when it was not running here. */
  stop(key: string): C | undefined {
    return this.move(key, ["owned", "draining"], "stopping");
  }

  /** owned | draining → down; the channel, or undefined when it was not running here. */
  setDown(key: string): C | undefined {
    return this.move(key, ["owned", "draining"], "down");
  }

  /** Lets go of the channel if it is (still) in `state`; true when it was. */
  forget(key: string, state: ChannelState): boolean {
    const s = this.slots.get(key);
    if (s?.state !== state) return false;
    s.state = undefined;
    this.slots.delete(key);
    return true;
  }

  private move(key: string, from: ChannelState[], to: ChannelState): C | undefined {
    const s = this.slots.get(key);
    if (!s?.state || !from.includes(s.state)) return undefined;
    s.state = to;
    return s.channel;
  }
}
