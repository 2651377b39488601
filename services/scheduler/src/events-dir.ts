import { createHash, randomBytes } from "node:crypto";
import { constants, existsSync } from "node:fs";
import { type FileHandle, lstat, mkdir, open, opendir, rename, rm, stat, unlink, writeFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { isEventFileName, MAX_EVENT_FILE_BYTES, printableFileName } from "@mom/events";

/** What a directory listing says about a file; a change of any of these means "read it again". */
export interface FileStamp {
  mtimeMs: number;
  size: number;
  ino: number;
}

export interface FileContent {
  stamp: FileStamp;
  /** SHA-256 of the bytes: what decides whether a file really changed. */
  hash: string;
  /** Undefined when the file is larger than MAX_EVENT_FILE_BYTES. */
  text?: string;
}

export type AsideKind = "invalid" | "missed";

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const isNotFound = (err: unknown) => ["ENOENT", "ENOTDIR"].includes((err as NodeJS.ErrnoException)?.code ?? "");
/** What opening a planted symlink (O_NOFOLLOW), FIFO or device without a reader gives. */
const isNotOurs = (err: unknown) => ["ELOOP", "ENXIO", "EMLINK"].includes((err as NodeJS.ErrnoException)?.code ?? "");

const PROC_FD = existsSync("/proc/self/fd");

/**
 * File operations on one events directory: the operator's `workspace/events/`, or a channel's
 * `channels/<adapter>/<channel>/events/`. Everything is written so that several replicas on one
 * shared volume can race: a file that vanished under us was handled by someone else.
 *
 * A channel's directory is `confined`: its channel's commands can change it at any moment, so it is
 * opened without following a symlink (its `events`, `invalid/`, `missed/` and every file in it) and
 * every name is resolved beneath that open directory (`/proc/self/fd/<n>/<name>`, as openat would),
 * so a directory swapped for a symlink to another channel's between a check and a use is never
 * read, listed, written or moved into. Files are opened non-blocking and must be regular files
 * (a FIFO never blocks the scheduler).
 */
export class EventsDir {
  constructor(
    readonly dir: string,
    readonly confined = false,
  ) {}

  asideDir(kind: AsideKind): string {
    return join(this.dir, kind);
  }

  async ensure(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
  }

  /**
   * Runs `fn` with a path under which names resolve inside this very directory. Throws ENOENT when
   * it is gone and ELOOP/ENOTDIR when it is not a directory (a symlink) in a confined one.
   */
  private async at<T>(fn: (base: string) => Promise<T>, sub?: AsideKind): Promise<T> {
    const path = sub ? join(this.dir, sub) : this.dir;
    if (!this.confined || !PROC_FD) {
      if (this.confined && (await lstat(path)).isSymbolicLink()) throw Object.assign(new Error(`${path} is a symlink`), { code: "ELOOP" });
      return fn(path);
    }
    const parent = sub ? await open(this.dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW) : undefined;
    try {
      const dir = await open(sub ? join(`/proc/self/fd/${parent!.fd}`, sub) : path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      try {
        return await fn(`/proc/self/fd/${dir.fd}`);
      } finally {
        await dir.close();
      }
    } finally {
      await parent?.close();
    }
  }

  /**
   * The event files with their stamps, among the directory's first `maxEntries` entries (a
   * channel's commands can fill it with millions: all their names at once would hold the scheduler
   * of every channel for seconds); `complete` says whether that was all of it. Throws when the
   * directory cannot be read.
   */
  async list(maxEntries = Infinity): Promise<{ files: Map<string, FileStamp>; complete: boolean }> {
    return this.at(async (base) => {
      const files = new Map<string, FileStamp>();
      let entries = 0;
      for await (const e of await opendir(base)) {
        if (++entries > maxEntries) return { files, complete: false };
        if (!isEventFileName(e.name) || e.isDirectory()) continue;
        try {
          // In a channel's directory a symlink is not an event file, whatever it points at.
          const st = this.confined ? await lstat(join(base, e.name)) : await stat(join(base, e.name));
          if (st.isFile()) files.set(e.name, { mtimeMs: st.mtimeMs, size: st.size, ino: st.ino });
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
      return { files, complete: true };
    });
  }

  /**
   * The file's bytes and stamp; undefined when it is gone. The stamp is taken from the open file
   * after its bytes were read: taken before, it could predate a write whose bytes the read saw
   * (a file created, then written), and an immediate event's fire time — its modification time,
   * the same on every replica — would differ between replicas that read the same bytes, so it
   * fired twice (scheduler-replicas once saw it).
   */
  async read(name: string): Promise<FileContent | undefined> {
    try {
      return await this.at((base) => this.readIn(base, name));
    } catch (err) {
      if (isNotFound(err) || (this.confined && isNotOurs(err))) return undefined;
      throw err;
    }
  }

  private async readIn(base: string, name: string): Promise<FileContent | undefined> {
    let file: FileHandle;
    try {
      file = await open(join(base, name), this.confined ? constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK : "r");
    } catch (err) {
      if (isNotFound(err) || (this.confined && isNotOurs(err))) return undefined;
      throw err;
    }
    try {
      const first = await file.stat();
      if (this.confined && !first.isFile()) return undefined;
      const size = first.size;
      const bytes = size > MAX_EVENT_FILE_BYTES ? undefined : await file.readFile();
      const st = await file.stat();
      const stamp = { mtimeMs: st.mtimeMs, size: st.size, ino: st.ino };
      if (!bytes || bytes.length > MAX_EVENT_FILE_BYTES) return { stamp, hash: `size:${st.size}:${st.mtimeMs}` };
      return { stamp, hash: sha256(bytes), text: bytes.toString("utf8") };
    } finally {
      await file.close();
    }
  }

  /**
   * Deletes a fired file, but only while it still holds what was fired: a file written again under
   * the same name in the meantime (a new reminder) is a new event and stays.
   */
  async removeIfUnchanged(name: string, hash: string): Promise<boolean> {
    try {
      return await this.at(async (base) => {
        const now = await this.readIn(base, name);
        if (!now || now.hash !== hash) return false;
        await unlink(join(base, name));
        return true;
      });
    } catch (err) {
      if (isNotFound(err) || (this.confined && isNotOurs(err))) return false;
      throw err;
    }
  }

  /**
   * Moves `events/<name>` into `events/<kind>/` (as `<name>`, or `<base>-2.json`… when taken) and
   * writes `<new name>.error` beside it. Returns the new name, or undefined when the file is gone or
   * changed (another replica moved it, or its author rewrote it). Rename is atomic, so of several
   * replicas exactly one moves a file and that one reports it.
   */
  async moveAside(name: string, kind: AsideKind, note: string, hash: string): Promise<string | undefined> {
    return this.at(async (base) => {
      const current = await this.readIn(base, name);
      if (!current || current.hash !== hash) return undefined;
      await mkdir(join(base, kind), { recursive: true });
      // In a channel's directory `invalid/` may have become a symlink meanwhile: `at` refuses it.
      return this.at(async (aside) => {
        const target = await freeName(aside, printableFileName(name));
        try {
          await rename(join(base, name), join(aside, target));
        } catch (err) {
          if (isNotFound(err)) return undefined;
          throw err;
        }
        // Whole or not at all: a reader (`mom events`, a person) never sees an empty note. Created
        // afresh (never through a name someone planted) and renamed over the note's name.
        const tmp = join(aside, `.${target}.error.${process.pid}.tmp`);
        await rm(tmp, { force: true });
        await writeFile(tmp, note, { flag: constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW });
        await rename(tmp, join(aside, `${target}.error`));
        return target;
      }, kind);
    });
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

async function freeName(dir: string, name: string): Promise<string> {
  const ext = extname(name);
  const base = name.slice(0, name.length - ext.length);
  for (let i = 1; ; i++) {
    // Past a hundred taken names (a channel can plant thousands), a random one: each move would
    // otherwise look at every name taken before it.
    const candidate = i === 1 ? name : i <= 100 ? `${base}-${i}${ext}` : `${base}-${randomBytes(6).toString("hex")}${ext}`;
    if (!(await exists(join(dir, candidate))) && !(await exists(join(dir, `${candidate}.error`)))) return candidate;
  }
}
