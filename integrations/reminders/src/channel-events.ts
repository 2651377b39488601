import { isEventFileName, MAX_EVENT_FILE_BYTES } from "@mom/events";
import { DirBeneath, fdPath, readRange, RefusedPathError, writeFileAtomicBeneath } from "@mom/store";
import { unlink } from "node:fs/promises";

/** An entry of the channel's events/ that looks like an event file. */
export type EventsDirEntry =
  | { name: string; text: string }
  /** Not readable as an event file (a symlink, a FIFO, too large): the scheduler skips or refuses it too. */
  | { name: string; refused: string };

/** The channel's events directory cannot be used (a symlink, a file); says what to do. */
export class EventsDirError extends Error {
  override name = "EventsDirError";
}

/** Entries read by list(); a channel has at most scheduler.maxQueuedPerChannel events anyway. */
const MAX_ENTRIES = 2000;
const EVENTS = "events";

/**
 * A channel's own `events/` directory, read and written the way the runner touches every file of
 * a channel (libs/store "beneath"; docs/sandbox.md "Runner-side file access"): the channel's
 * directory is the root, `events` and every file in it are opened without following a symlink and
 * relative to the directory's descriptor, only regular files are read (a FIFO never blocks), and
 * new files are written whole (a dot file, then linked into place, never over anything). The
 * channel's commands can change this directory at any time; what they plant is refused, never
 * followed into another channel's directory or out of the workspace.
 */
export class ChannelEventsDir {
  constructor(readonly channelDir: string) {}

  /** The event files, by name; [] when there is no events/ yet. */
  async list(): Promise<{ entries: EventsDirEntry[]; truncated: boolean }> {
    const dir = await this.open();
    if (!dir) return { entries: [], truncated: false };
    try {
      const { entries, truncated } = await dir.list(MAX_ENTRIES);
      const out: EventsDirEntry[] = [];
      for (const e of entries.filter((x) => isEventFileName(x.name)).sort((a, b) => a.name.localeCompare(b.name))) {
        if (e.kind === "directory") continue;
        if (e.kind === "symlink") {
          out.push({ name: e.name, refused: "is a symlink: never an event file (the scheduler skips it)" });
          continue;
        }
        try {
          const text = await readIn(dir, e.name);
          if (text !== undefined) out.push({ name: e.name, text });
        } catch (err) {
          if (!(err instanceof RefusedPathError)) throw err;
          out.push({ name: e.name, refused: err.why });
        }
      }
      return { entries: out, truncated };
    } finally {
      await dir.close();
    }
  }

  /** Writes the new event file `name` whole; false when that name is taken (nothing is replaced). */
  async create(name: string, text: string): Promise<boolean> {
    try {
      await writeFileAtomicBeneath(this.channelDir, EVENTS, name, Buffer.from(text));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw this.explain(err);
    }
  }

  /**
   * Removes the event file `name` and returns what it held; undefined when there is none. Only a
   * regular file is removed: a symlink or FIFO of that name is refused (it is no event).
   */
  async remove(name: string): Promise<string | undefined> {
    const dir = await this.open();
    if (!dir) return undefined;
    try {
      const text = await readIn(dir, name).catch((err) => {
        throw this.explain(err);
      });
      if (text === undefined) return undefined;
      // By the directory's descriptor: a directory swapped in since is not where this unlinks.
      await unlink(fdPath(dir.fh, name));
      return text;
    } finally {
      await dir.close();
    }
  }

  private async open(): Promise<DirBeneath | undefined> {
    try {
      return await DirBeneath.open(this.channelDir, EVENTS);
    } catch (err) {
      throw this.explain(err);
    }
  }

  private explain(err: unknown): unknown {
    if (!(err instanceof RefusedPathError)) return err;
    if (err.path === EVENTS) {
      return new EventsDirError(`this channel's events directory cannot be used: ${err.message}. Remove it (\`rm ${EVENTS}\` in the channel's directory) and call again; it is made anew`);
    }
    return new EventsDirError(`${err.message}; it is not an event file, and nothing was changed`);
  }
}

/** A regular file's text, at most MAX_EVENT_FILE_BYTES; undefined when missing. Refuses anything else. */
async function readIn(dir: DirBeneath, name: string): Promise<string | undefined> {
  const fh = await dir.file(name, "read");
  if (!fh) return undefined;
  try {
    const buf = await readRange(fh, 0, MAX_EVENT_FILE_BYTES + 1);
    if (buf.length > MAX_EVENT_FILE_BYTES) throw new RefusedPathError(`${dir.rel}/${name}`, `is larger than ${MAX_EVENT_FILE_BYTES} bytes: not an event file`);
    return buf.toString("utf8");
  } finally {
    await fh.close();
  }
}
