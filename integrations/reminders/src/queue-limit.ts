import { loadConfig } from "@mom/config";
import type { ChannelRef } from "@mom/contracts";
import { isEventFileName, MAX_EVENT_FILE_BYTES, parseEventFile } from "@mom/events";
import { readBeneath, RefusedPathError, WorkspaceLayout } from "@mom/store";
import { readdir } from "node:fs/promises";

/** What the scheduler is configured with (config.json, read at each call: the operator may change it). */
export interface SchedulerView {
  /** scheduler.maxQueuedPerChannel: events one channel may have; the scheduler moves more to invalid/. */
  maxQueuedPerChannel: number;
  /** The configured adapters: the channels the operator's events/ may target. */
  adapters: Set<string>;
  workspaceDir: string;
}

export function schedulerView(dataDir: string): SchedulerView {
  const { config, paths } = loadConfig(dataDir);
  return { maxQueuedPerChannel: config.scheduler.maxQueuedPerChannel, adapters: new Set(Object.keys(config.adapters)), workspaceDir: paths.workspaceDir };
}

/**
 * The operator's `workspace/events/` files that are valid events for `owner`: the scheduler counts
 * them against the channel's limit together with the channel's own. Read without following a
 * symlink or waiting on a FIFO; a file that cannot be read is not counted (the scheduler does not
 * schedule it either).
 */
export async function operatorEventsFor(view: SchedulerView, owner: ChannelRef): Promise<number> {
  const eventsDir = new WorkspaceLayout(view.workspaceDir).eventsDir;
  let names: string[];
  try {
    names = (await readdir(eventsDir)).filter(isEventFileName);
  } catch {
    return 0;
  }
  let count = 0;
  for (const name of names) {
    let bytes: Buffer | undefined;
    try {
      bytes = await readBeneath(view.workspaceDir, `events/${name}`, MAX_EVENT_FILE_BYTES);
    } catch (err) {
      if (err instanceof RefusedPathError) continue;
      throw err;
    }
    if (!bytes) continue;
    const parsed = parseEventFile(name, bytes.toString("utf8"), { adapters: view.adapters });
    if (parsed.ok && parsed.event.ref.adapter === owner.adapter && parsed.event.ref.channelId === owner.channelId) count++;
  }
  return count;
}
