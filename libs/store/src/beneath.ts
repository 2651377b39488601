import { constants, type Dirent, existsSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { type FileHandle, link, lstat, mkdir, open, opendir, readlink, rename, unlink } from "node:fs/promises";
import { extname } from "node:path";

/**
 * Files the runner reads and writes on a channel's behalf, resolved beneath a root directory
 * (the channel's directory, or the workspace for its shared files) the way openat2's
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS would: Node has no openat, so each component is opened
 * relative to the previous one's descriptor through `/proc/self/fd/<fd>/<name>` with O_NOFOLLOW
 * (and O_DIRECTORY for directories). Nothing the agent did to the tree can redirect the runner:
 *
 * - a symlink anywhere below the root is refused, never followed (a symlink swapped in between
 *   two steps is refused by the step that meets it; one swapped in after is no longer on the way);
 * - only directories and regular files are opened, with O_NONBLOCK, so a FIFO, socket or device
 *   is refused before anything can wait on it;
 * - an existing file that is written or appended to must have one link (a hard link to another
 *   channel's file would make the runner write there);
 * - new files are made with O_EXCL, and the opened file's real path (/proc/self/fd) must still be
 *   beneath the root's, so a directory moved out of the root between two steps is caught.
 *
 * The root itself is trusted (it is made by the runner, in a directory the agent cannot write).
 * A refusal throws RefusedPathError, whose message says what was found, for the channel's model
 * and the runner's log. Limits: see docs/sandbox.md ("Runner-side file access").
 */
export class RefusedPathError extends Error {
  constructor(
    /** Path relative to the root, as the channel knows it. */
    readonly path: string,
    readonly why: string,
  ) {
    super(`${path}: ${why}`);
  }
}

/** How a file is opened: read; append (created when missing); create (O_EXCL); write (created when missing, truncated by the caller). */
export type OpenMode = "read" | "append" | "create" | "write";

export interface BeneathOptions {
  /** Create missing directories on the way (never through a symlink). Default: true for writes, false for reads. */
  createDirs?: boolean;
  /** Called before each component is opened, with the path so far; for tests that swap a symlink in between two steps. */
  beforeStep?: (rel: string) => void | Promise<void>;
}

const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_APPEND, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK;
const FILE_FLAGS: Record<OpenMode, number> = {
  read: O_RDONLY | O_NOFOLLOW | O_NONBLOCK,
  // O_RDWR: appendLine reads the last byte to repair a torn line; it also opens a FIFO without waiting.
  append: O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK,
  create: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK,
  write: O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK,
};

let procChecked = false;
function requireProc(): void {
  if (procChecked) return;
  if (!existsSync("/proc/self/fd")) throw new Error("/proc is not mounted: the runner needs /proc/self/fd to open channel files without following symlinks");
  procChecked = true;
}

/** The path through which a descriptor's file can be reached again (openat emulation). */
export function fdPath(fh: FileHandle, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fh.fd}` : `/proc/self/fd/${fh.fd}/${name}`;
}

/** The components of a relative path; `..`, absolute paths and empty names are refused. */
function components(rel: string): string[] {
  const parts = rel.split("/").filter((p) => p !== "" && p !== ".");
  if (rel.startsWith("/") || parts.some((p) => p === "..")) throw new RefusedPathError(rel, "not a path beneath the channel's directory");
  return parts;
}

/** What an entry the walk refused is, for the message (`is a symlink`, `is a FIFO, not a regular file`). */
async function whatIs(dir: FileHandle, name: string, wanted: "directory" | "regular file"): Promise<string> {
  const st = await lstat(fdPath(dir, name)).catch(() => undefined);
  if (!st) return "disappeared while being opened";
  if (st.isSymbolicLink()) return "is a symlink (the runner never follows symlinks in a channel's directory)";
  return `is ${kindOf(st)}, not a ${wanted}`;
}

function kindOf(st: { isFIFO(): boolean; isSocket(): boolean; isDirectory(): boolean; isFile(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean }): string {
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isDirectory()) return "a directory";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  if (st.isFile()) return "a regular file";
  return "something else";
}

async function openRoot(root: string, create: boolean): Promise<FileHandle> {
  requireProc();
  try {
    return await open(root, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT" || !create) throw err;
    await mkdir(root, { recursive: true });
    return await open(root, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
  }
}

/** Where `fh` really is, from the kernel. */
async function realOf(fh: FileHandle): Promise<string> {
  return readlink(fdPath(fh));
}

function beneath(real: string, rootReal: string): boolean {
  return real === rootReal || real.startsWith(rootReal.endsWith("/") ? rootReal : `${rootReal}/`);
}

/**
 * A directory opened beneath a root (see above), from which further steps are taken relative to
 * its descriptor: a walk over a tree opens each directory once. Close it when done.
 */
export class DirBeneath {
  private constructor(
    readonly fh: FileHandle,
    /** The root's real path when it was opened. */
    readonly rootReal: string,
    /** Its path relative to the root. */
    readonly rel: string,
  ) {}

  /** The directory `rel` beneath `root`, or undefined when it (or one on the way) is missing and `createDirs` is off. */
  static async open(root: string, rel: string, opts: BeneathOptions = {}): Promise<DirBeneath | undefined> {
    const parts = components(rel);
    let at: DirBeneath;
    try {
      const fh = await openRoot(root, opts.createDirs ?? false);
      at = new DirBeneath(fh, await realOf(fh).catch(async (err) => {
        await fh.close();
        throw err;
      }), "");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
    try {
      for (const name of parts) {
        const next = await at.step(name, opts.createDirs ?? false, opts.beforeStep);
        await at.close();
        if (!next) return undefined;
        at = next;
      }
      if (!beneath(await realOf(at.fh), at.rootReal)) throw new RefusedPathError(rel || ".", "was moved out of the channel's directory while being opened");
      return at;
    } catch (err) {
      await at.close().catch(() => undefined);
      throw err;
    }
  }

  private path(name: string): string {
    return this.rel ? `${this.rel}/${name}` : name;
  }

  /** The subdirectory `name` (one component), never through a symlink; undefined when missing. */
  dir(name: string): Promise<DirBeneath | undefined> {
    return this.step(components(name).length === 1 ? name : "", false, undefined);
  }

  private async step(name: string, create: boolean, beforeStep: BeneathOptions["beforeStep"]): Promise<DirBeneath | undefined> {
    const rel = this.path(name);
    if (!name) throw new RefusedPathError(rel, "not a single name");
    await beforeStep?.(rel);
    const refuse = async (e: NodeJS.ErrnoException): Promise<never> => {
      if (e.code === "ELOOP" || e.code === "ENOTDIR") throw new RefusedPathError(rel, await whatIs(this.fh, name, "directory"));
      throw e;
    };
    try {
      return new DirBeneath(await open(fdPath(this.fh, name), DIR_FLAGS), this.rootReal, rel);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e.code !== "ENOENT") return refuse(e);
      if (!create) return undefined;
    }
    // mkdir never follows a symlink in its last component: one planted meanwhile gives EEXIST.
    await mkdir(fdPath(this.fh, name), 0o755).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== "EEXIST") throw e;
    });
    return new DirBeneath(await open(fdPath(this.fh, name), DIR_FLAGS).catch(refuse), this.rootReal, rel);
  }

  /**
   * The file `name` in this directory, opened in `mode` after the checks above; undefined when it
   * is missing and the mode does not create it. For "write" the caller truncates: O_TRUNC would
   * empty a hard-linked file before the link count is seen.
   */
  async file(name: string, mode: OpenMode, beforeStep?: BeneathOptions["beforeStep"]): Promise<FileHandle | undefined> {
    const rel = this.path(name);
    if (components(name).length !== 1) throw new RefusedPathError(rel, "not a single name");
    await beforeStep?.(rel);
    let fh: FileHandle;
    try {
      fh = await open(fdPath(this.fh, name), FILE_FLAGS[mode], 0o644);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" && mode === "read") return undefined;
      // ELOOP: a symlink (O_NOFOLLOW); ENXIO: a FIFO with no reader or a socket (O_NONBLOCK); EISDIR; ENOTDIR.
      if (code === "ELOOP" || code === "ENXIO" || code === "EISDIR" || code === "ENOTDIR" || code === "EOPNOTSUPP") {
        throw new RefusedPathError(rel, await whatIs(this.fh, name, "regular file"));
      }
      throw err;
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new RefusedPathError(rel, `is ${kindOf(st)}, not a regular file`);
      if (mode !== "read" && st.nlink > 1) throw new RefusedPathError(rel, `has ${st.nlink} hard links (it may be another channel's file); the runner writes only to files with one`);
      if (!beneath(await realOf(fh), this.rootReal)) throw new RefusedPathError(rel, "is not beneath the channel's directory");
      return fh;
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  /** At most `maxEntries` entries (see listDir). */
  list(maxEntries: number): Promise<{ entries: ListedEntry[]; truncated: boolean }> {
    return listDir(this.fh, maxEntries);
  }

  close(): Promise<void> {
    return this.fh.close();
  }
}

/**
 * The directory `rel` beneath `root`, opened (a descriptor the caller closes), or undefined when
 * it is missing and `createDirs` is off.
 */
export async function openDirBeneath(root: string, rel: string, opts: BeneathOptions = {}): Promise<FileHandle | undefined> {
  return (await DirBeneath.open(root, rel, opts))?.fh;
}

/**
 * The file `rel` beneath `root`, opened in `mode` after the checks above; undefined when it (or
 * a directory on the way) is missing and the mode does not create it.
 */
export async function openBeneath(root: string, rel: string, mode: OpenMode, opts: BeneathOptions = {}): Promise<FileHandle | undefined> {
  const parts = components(rel);
  const name = parts.pop();
  if (name === undefined) throw new RefusedPathError(rel, "not a file name");
  const dir = await DirBeneath.open(root, parts.join("/"), { ...opts, createDirs: opts.createDirs ?? mode !== "read" });
  if (!dir) return undefined;
  try {
    return await dir.file(name, mode, opts.beforeStep);
  } finally {
    await dir.close();
  }
}

/** A whole file of at most `maxBytes` (refused when larger); undefined when missing. */
export async function readBeneath(root: string, rel: string, maxBytes: number, opts?: BeneathOptions): Promise<Buffer | undefined> {
  const fh = await openBeneath(root, rel, "read", opts);
  if (!fh) return undefined;
  try {
    const { size } = await fh.stat();
    if (size > maxBytes) throw new RefusedPathError(rel, `is ${size} bytes, more than the ${maxBytes} the runner reads`);
    const buf = await readRange(fh, 0, size + 1);
    if (buf.length > maxBytes) throw new RefusedPathError(rel, `grew past ${maxBytes} bytes while being read`);
    return buf;
  } finally {
    await fh.close();
  }
}

/** At most the last `n` bytes of a file and its size; undefined when missing. */
export async function readTailBeneath(root: string, rel: string, n: number, opts?: BeneathOptions): Promise<{ data: Buffer; size: number } | undefined> {
  const fh = await openBeneath(root, rel, "read", opts);
  if (!fh) return undefined;
  try {
    const { size } = await fh.stat();
    const from = Math.max(0, size - n);
    return { data: await readRange(fh, from, size), size };
  } finally {
    await fh.close();
  }
}

/** Bytes [start, end) of an open file (fewer when it is shorter). */
export async function readRange(fh: FileHandle, start: number, end: number): Promise<Buffer> {
  if (end <= start) return Buffer.alloc(0);
  const buf = Buffer.alloc(end - start);
  let got = 0;
  while (got < buf.length) {
    const { bytesRead } = await fh.read(buf, got, buf.length - got, start + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}

/**
 * Writes `bytes` to a new file `name` in the directory `relDir` beneath `root` (made when
 * missing), or `name-2.ext`, `name-3.ext`, … when that exists: nothing is ever overwritten
 * (O_EXCL), and nothing is written through a symlink. Returns the name used.
 */
export async function writeNewFileBeneath(root: string, relDir: string, name: string, bytes: Uint8Array, opts?: BeneathOptions): Promise<string> {
  const prefix = components(relDir).join("/");
  const ext = extname(name);
  const stem = name.slice(0, name.length - ext.length);
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? name : `${stem}-${n}${ext}`;
    let fh: FileHandle | undefined;
    try {
      fh = await openBeneath(root, prefix ? `${prefix}/${candidate}` : candidate, "create", opts);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST" && n < 10_000) continue;
      throw err;
    }
    try {
      await fh!.writeFile(bytes);
    } finally {
      await fh!.close();
    }
    return candidate;
  }
}

/**
 * Writes `bytes` as the new file `name` in the directory `relDir` beneath `root` (made when
 * missing) whole or not at all: first into a fresh dot file beside it (O_EXCL, never through a
 * symlink), which is then hard-linked to `name` and removed. A reader that skips dot files (the
 * scheduler) therefore never sees a partial file, and nothing is ever overwritten: when `name`
 * exists — a file, a planted symlink, a FIFO — this throws an error with code EEXIST and leaves it
 * as it was.
 */
export async function writeFileAtomicBeneath(root: string, relDir: string, name: string, bytes: Uint8Array, opts?: BeneathOptions): Promise<void> {
  const dir = await DirBeneath.open(root, relDir, { ...opts, createDirs: opts?.createDirs ?? true });
  if (!dir) throw new RefusedPathError(relDir, "is missing");
  try {
    if (components(name).length !== 1 || name.startsWith(".")) throw new RefusedPathError(dir.rel ? `${dir.rel}/${name}` : name, "not a single name, or a dot file");
    const tmp = `.${name}.${randomBytes(6).toString("hex")}.tmp`;
    const fh = (await dir.file(tmp, "create", opts?.beforeStep))!;
    try {
      await fh.writeFile(bytes);
    } finally {
      await fh.close();
    }
    try {
      // link(2) never follows a symlink of either name and fails when the new one exists.
      await link(fdPath(dir.fh, tmp), fdPath(dir.fh, name));
    } finally {
      await unlink(fdPath(dir.fh, tmp)).catch(() => undefined);
    }
  } finally {
    await dir.close();
  }
}

/**
 * Renames an entry the runner refused (a symlink, FIFO or hard link where its own file belongs)
 * to `<name>.refused-<time>` in the same directory, so the runner can make its file again;
 * the entry itself is never followed or opened. Returns the new name. `asideName` names it
 * otherwise (in the same directory).
 */
export async function moveAsideBeneath(root: string, rel: string, asideName?: string): Promise<string> {
  const parts = components(rel);
  const name = parts.pop()!;
  const dir = await DirBeneath.open(root, parts.join("/"));
  if (!dir) throw new RefusedPathError(rel, "its directory is missing");
  try {
    const aside = asideName ?? `${name}.refused-${Date.now()}`;
    await rename(fdPath(dir.fh, name), fdPath(dir.fh, aside));
    return aside;
  } finally {
    await dir.close();
  }
}

export interface ListedEntry {
  name: string;
  kind: "file" | "directory" | "symlink" | "other";
}

/**
 * At most `maxEntries` entries of an open directory (by lstat type: a symlink is reported as one,
 * never followed); `truncated` when there were more.
 */
export async function listDir(dir: FileHandle, maxEntries: number): Promise<{ entries: ListedEntry[]; truncated: boolean }> {
  const entries: ListedEntry[] = [];
  const d = await opendir(fdPath(dir), { bufferSize: 64 });
  try {
    for await (const e of d as AsyncIterable<Dirent>) {
      if (entries.length >= maxEntries) return { entries, truncated: true };
      // A file system that gives no type in its entries (DT_UNKNOWN): lstat, which never follows.
      const t = e.isSymbolicLink() || e.isDirectory() || e.isFile() || e.isFIFO() || e.isSocket() || e.isCharacterDevice() || e.isBlockDevice() ? e : await lstat(fdPath(dir, e.name)).catch(() => undefined);
      if (!t) continue;
      entries.push({ name: e.name, kind: t.isSymbolicLink() ? "symlink" : t.isDirectory() ? "directory" : t.isFile() ? "file" : "other" });
    }
    return { entries, truncated: false };
  } finally {
    // for-await closes the Dir when it runs to the end; an early return leaves it open.
    await d.close().catch(() => undefined);
  }
}
