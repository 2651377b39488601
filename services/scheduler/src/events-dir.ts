import { createHash } from "node:crypto";
import { type FileHandle, mkdir, open, readdir, rename, stat, unlink, writeFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { isEventFileName, MAX_EVENT_FILE_BYTES, printableFileName } from "./event-file.js";

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

/**
 * File operations on `workspace/events/`. Everything is written so that several replicas on one
 * shared volume can race: a file that vanished under us was handled by someone else.
 */
export class EventsDir {
  constructor(readonly dir: string) {}

  asideDir(kind: AsideKind): string {
    return join(this.dir, kind);
  }

  async ensure(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
  }

  /** The event files with their stamps; throws when the directory cannot be read. */
  async list(): Promise<Map<string, FileStamp>> {
    const out = new Map<string, FileStamp>();
    const entries = await readdir(this.dir, { withFileTypes: true });
    for (const e of entries) {
      if (!isEventFileName(e.name) || e.isDirectory()) continue;
      try {
        const st = await stat(join(this.dir, e.name));
        if (st.isFile()) out.set(e.name, { mtimeMs: st.mtimeMs, size: st.size, ino: st.ino });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    return out;
  }

  /**
   * The file's bytes and stamp; undefined when it is gone. The stamp is taken from the open file
   * after its bytes were read: taken before, it could predate a write whose bytes the read saw
   * (a file created, then written), and an immediate event's fire time — its modification time,
   * the same on every replica — would differ between replicas that read the same bytes, so it
   * fired twice (scheduler-replicas once saw it).
   */
  async read(name: string): Promise<FileContent | undefined> {
    let file: FileHandle;
    try {
      file = await open(join(this.dir, name), "r");
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
    try {
      const size = (await file.stat()).size;
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
    const now = await this.read(name);
    if (!now || now.hash !== hash) return false;
    try {
      await unlink(join(this.dir, name));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
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
    const current = await this.read(name);
    if (!current || current.hash !== hash) return undefined;
    const dir = this.asideDir(kind);
    await mkdir(dir, { recursive: true });
    const target = await freeName(dir, printableFileName(name));
    try {
      await rename(join(this.dir, name), join(dir, target));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
    // Whole or not at all: a reader (`mom events`, a person) never sees an empty note.
    const tmp = join(dir, `.${target}.error.${process.pid}.tmp`);
    await writeFile(tmp, note);
    await rename(tmp, join(dir, `${target}.error`));
    return target;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

async function freeName(dir: string, name: string): Promise<string> {
  const ext = extname(name);
  const base = name.slice(0, name.length - ext.length);
  for (let i = 1; ; i++) {
    const candidate = i === 1 ? name : `${base}-${i}${ext}`;
    if (!(await exists(join(dir, candidate))) && !(await exists(join(dir, `${candidate}.error`)))) return candidate;
  }
}
