/**
 * At most `perMinute` messages per channel in any 60-second window. Each replica counts what it
 * published itself; replicas see the same files and so take the same decisions.
 */
export class ChannelRateLimit {
  private readonly sent = new Map<string, number[]>();

  constructor(private readonly perMinute: number) {}

  /** When the channel may get its next message: `now` when it may now. */
  nextSlot(channel: string, now: number): number {
    const times = this.window(channel, now);
    return times.length < this.perMinute ? now : times[times.length - this.perMinute]! + 60_000;
  }

  record(channel: string, now: number): void {
    const times = this.window(channel, now);
    times.push(now);
    this.sent.set(channel, times);
  }

  private window(channel: string, now: number): number[] {
    const times = (this.sent.get(channel) ?? []).filter((t) => t > now - 60_000);
    if (times.length) this.sent.set(channel, times);
    else this.sent.delete(channel);
    return times;
  }
}
