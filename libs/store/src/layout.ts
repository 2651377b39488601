import { mkdir, readdir } from "node:fs/promises";
import { type Dirent, readdirSync } from "node:fs";
import { join } from "node:path";
import { ADAPTER_NAME_PATTERN, assertAdapterName, escapeChannelToken, unescapeChannelToken, type ChannelRef } from "@mom/contracts";
import { ChannelStore } from "./channel-store.js";

/**
 * Paths of `data/workspace`. A channel lives in `channels/<adapter>/<escaped id>`: the adapter
 * name is already [a-z0-9-]+, and the escaped id uses only [A-Za-z0-9_~-], so no platform id
 * (one with "/" or "..") can leave its adapter's directory, and the id can be read back.
 */
export class WorkspaceLayout {
  readonly memoryFile: string;
  readonly skillsDir: string;
  readonly toolsDir: string;
  readonly eventsDir: string;
  readonly channelsDir: string;
  // One store per channel per process, so its append queue and id set are the only ones.
  private readonly stores = new Map<string, ChannelStore>();

  constructor(readonly workspaceDir: string) {
    this.memoryFile = join(workspaceDir, "MEMORY.md");
    this.skillsDir = join(workspaceDir, "skills");
    this.toolsDir = join(workspaceDir, "tools");
    this.eventsDir = join(workspaceDir, "events");
    this.channelsDir = join(workspaceDir, "channels");
  }

  async ensureWorkspace(): Promise<void> {
    for (const dir of [this.skillsDir, this.toolsDir, this.eventsDir, this.channelsDir]) await mkdir(dir, { recursive: true });
  }

  channelDir(ref: ChannelRef): string {
    assertAdapterName(ref.adapter);
    return join(this.channelsDir, ref.adapter, escapeChannelToken(ref.channelId));
  }

  /** The channel's store; directories are created on its first write, not here. */
  channel(ref: ChannelRef): ChannelStore {
    const dir = this.channelDir(ref);
    let store = this.stores.get(dir);
    if (!store) {
      store = new ChannelStore({ adapter: ref.adapter, channelId: ref.channelId }, dir, this.memoryFile);
      this.stores.set(dir, store);
    }
    return store;
  }

  /** Every channel that has a directory; entries that are not ours (stray files, bad names) are ignored. */
  listChannels(): ChannelRef[] {
    const adapters = subdirs(this.channelsDir).filter((a) => ADAPTER_NAME_PATTERN.test(a));
    return channelRefs(adapters.map((a) => [a, subdirs(join(this.channelsDir, a))]));
  }

  /** listChannels without blocking the event loop: a shared volume can be slow to list thousands of directories. */
  async readChannels(): Promise<ChannelRef[]> {
    const adapters = (await subdirsAsync(this.channelsDir)).filter((a) => ADAPTER_NAME_PATTERN.test(a));
    return channelRefs(await Promise.all(adapters.map(async (a): Promise<[string, string[]]> => [a, await subdirsAsync(join(this.channelsDir, a))])));
  }
}

function channelRefs(byAdapter: [string, string[]][]): ChannelRef[] {
  const refs: ChannelRef[] = [];
  for (const [adapter, tokens] of byAdapter) {
    for (const token of tokens) {
      try {
        refs.push({ adapter, channelId: unescapeChannelToken(token) });
      } catch {
        // not a directory mom made
      }
    }
  }
  return refs;
}

function subdirs(dir: string): string[] {
  try {
    return directoryNames(readdirSync(dir, { withFileTypes: true }));
  } catch (err) {
    return noneIfMissing(err);
  }
}

async function subdirsAsync(dir: string): Promise<string[]> {
  try {
    return directoryNames(await readdir(dir, { withFileTypes: true }));
  } catch (err) {
    return noneIfMissing(err);
  }
}

function directoryNames(entries: Dirent[]): string[] {
  return entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

function noneIfMissing(err: unknown): string[] {
  if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
  throw err;
}
