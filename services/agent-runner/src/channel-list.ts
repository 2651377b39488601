import type { WorkspaceLayout } from "@mom/store";
import { qualifiedChannelId } from "@mom/contracts";
import type { Logger } from "pino";

/** How stale the list of channels in a prompt may be: a channel made meanwhile shows up this much later. */
export const CHANNEL_LIST_REFRESH_MS = 10_000;

/**
 * The workspace's channels, for every run's prompt. Listing the channels directory on each run cost
 * every run a synchronous read of it (0.3 ms for 500 channels on a local disk, more on a shared
 * volume, with the event loop of every channel waiting); this lists it once, then again in the
 * background when a run finds the list older than `refreshMs`.
 */
export class ChannelList {
  private names: string[] = [];
  private listedAt = 0;
  private first?: Promise<void>;
  private refreshing?: Promise<void>;

  constructor(
    private readonly layout: WorkspaceLayout,
    private readonly log: Logger,
    private readonly refreshMs = CHANNEL_LIST_REFRESH_MS,
  ) {}

  async get(): Promise<string[]> {
    this.first ??= this.refresh();
    await this.first;
    if (Date.now() - this.listedAt >= this.refreshMs) this.refreshing ??= this.refresh().finally(() => (this.refreshing = undefined));
    return this.names;
  }

  private async refresh(): Promise<void> {
    try {
      this.names = (await this.layout.readChannels()).map(qualifiedChannelId);
    } catch (err) {
      this.log.warn({ err }, "could not list the workspace's channels; prompts keep the list they had");
    }
    // A failure is tried again after refreshMs too, not by every run.
    this.listedAt = Date.now();
  }
}
