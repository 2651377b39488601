import { constants } from "node:fs";
import { lchown, lstat, mkdir, open, readlink, realpath, type FileHandle } from "node:fs/promises";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { mayAccess, R_OK, type SandboxIdentity, unsearchableDir, W_OK, X_OK } from "./file-rights.js";
import { inside, modeAt, type MountMode, type SandboxView } from "./view.js";

/** A path the file tools refuse; the message is written for the model. */
export class PathRefusedError extends Error {}

// O_NONBLOCK: opening a FIFO must never wait for a writer (it would hold a libuv thread, and four
// of those stall every file operation of the runner). O_NOFOLLOW: the last component was resolved
// already; a symlink swapped in since is refused, not followed.
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;
const WRITE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_NONBLOCK | constants.O_NOFOLLOW;
// O_DIRECTORY: a FIFO or device in a directory's place is refused by the kernel, never opened.
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NONBLOCK;

/**
 * The file operations of read, write, edit, attach and scratch files, done by the runner on the
 * host but only where the channel's view allows: every path is resolved through its symlinks
 * first and judged where it really is, and the opened file is judged again by what the kernel
 * says it is (/proc/self/fd), so a symlink swapped in between cannot lead out. Only regular files
 * are read or written (FIFOs, devices and sockets are refused before anything waits on them),
 * and a read returns at most `maxBytes`.
 */
export class ConfinedFiles {
  /**
   * `identity`: who the channel's commands are (see file-rights.ts). Given, every file is also
   * judged by its mode bits for that uid and gid, and every directory on the way by its search
   * bit, so the tools reach what bash reaches and nothing more (a root runner's own rights do not
   * leak to them). What they create is handed to that uid and gid when the runner is someone else
   * (root), so bash can change it afterwards.
   */
  constructor(
    private readonly view: SandboxView,
    private readonly maxBytes: number,
    private readonly identity?: SandboxIdentity,
    /** Run before each write (hands directories the runner made since to the channel's uid). */
    private readonly prepare?: () => Promise<void>,
  ) {}

  /** Whether the view shows an absolute path whose symlinks are already resolved. */
  isVisible(realPath: string): boolean {
    return modeAt(this.view, realPath) !== "hidden";
  }

  /** The real path of an existing file the view shows; refused otherwise. */
  async resolveVisible(path: string): Promise<string> {
    const real = await this.realExisting(path);
    this.require(path, real, "ro");
    return real;
  }

  async access(path: string, want: "read" | "write"): Promise<void> {
    const real = await this.realExisting(path);
    this.require(path, real, want === "write" ? "rw" : "ro");
    await this.requireRights(path, real, want === "write" ? W_OK : R_OK);
  }

  /** The whole file, if it is a regular file of at most `maxBytes` (default: the executor's cap). */
  async readFile(path: string, maxBytes = this.maxBytes): Promise<Buffer> {
    const real = await this.resolveVisible(path);
    const fh = await this.openChecked(path, real, READ_FLAGS, "ro");
    try {
      const { size } = await fh.stat();
      if (size > maxBytes) throw new PathRefusedError(`${path}: too large to read whole (${size} bytes; the limit is ${maxBytes}). Use bash (head, tail, grep, sed -n) to read parts of it.`);
      const buf = Buffer.alloc(Math.min(size, maxBytes) + 1);
      let total = 0;
      while (total < buf.length) {
        const { bytesRead } = await fh.read(buf, total, buf.length - total, null);
        if (bytesRead === 0) break;
        total += bytesRead;
      }
      // It grew while we read: what fits the limit is still the file's start, but say so.
      if (total > maxBytes) throw new PathRefusedError(`${path}: grew past the ${maxBytes}-byte read limit while being read`);
      return buf.subarray(0, total);
    } finally {
      await fh.close();
    }
  }

  /** The first `n` bytes (for sniffing a file type); same rules as readFile. */
  async readHead(path: string, n: number): Promise<Buffer> {
    const real = await this.resolveVisible(path);
    const fh = await this.openChecked(path, real, READ_FLAGS, "ro");
    try {
      const buf = Buffer.alloc(n);
      const { bytesRead } = await fh.read(buf, 0, n, 0);
      return buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  }

  /** At most the last `n` bytes and the file's size (for files read into a prompt); same rules as readFile. */
  async readTail(path: string, n: number): Promise<{ data: Buffer; size: number }> {
    const real = await this.resolveVisible(path);
    const fh = await this.openChecked(path, real, READ_FLAGS, "ro");
    try {
      const { size } = await fh.stat();
      const from = Math.max(0, size - n);
      const buf = Buffer.alloc(size - from);
      let total = 0;
      while (total < buf.length) {
        const { bytesRead } = await fh.read(buf, total, buf.length - total, from + total);
        if (bytesRead === 0) break;
        total += bytesRead;
      }
      return { data: buf.subarray(0, total), size };
    } finally {
      await fh.close();
    }
  }

  async writeFile(path: string, content: string | Uint8Array): Promise<void> {
    await this.prepare?.();
    const abs = resolve(this.view.channelDir, path);
    let parent: string;
    try {
      parent = await realpath(dirname(abs));
    } catch {
      throw new PathRefusedError(`${path}: the directory ${dirname(abs)} does not exist`);
    }
    let target = join(parent, basename(abs));
    const existing = await lstat(target).catch(() => undefined);
    if (existing?.isSymbolicLink()) {
      target = await realpath(target).catch(() => {
        throw new PathRefusedError(`${path}: is a symlink to a missing file; write to a real path`);
      });
    }
    this.require(path, target, "rw");
    const created = !(await lstat(target).catch(() => undefined));
    if (created) await this.requireRights(path, dirname(target), W_OK | X_OK, "the directory");
    const fh = await this.openChecked(path, target, WRITE_FLAGS, "rw", created);
    try {
      if (created) await this.handOver(fh);
      await fh.truncate(0);
      await fh.writeFile(content);
    } finally {
      await fh.close();
    }
  }

  /** `mkdir -p` where the view lets this channel write. */
  async mkdir(dir: string): Promise<void> {
    await this.prepare?.();
    const abs = resolve(this.view.channelDir, dir);
    let existing = abs;
    while ((await lstat(existing).catch(() => undefined)) === undefined) {
      const up = dirname(existing);
      if (up === existing) break;
      existing = up;
    }
    const real = await realpath(existing);
    const rest = relative(existing, abs);
    if (!rest) {
      this.require(dir, real, "ro");
      return;
    }
    this.require(dir, join(real, rest), "rw");
    await this.requireRights(dir, real, W_OK | X_OK, "the directory");
    // One directory at a time, each made inside the one opened and judged before it: a `mkdir -p`
    // by name would follow a directory the channel swapped for a symlink since `realpath` (a
    // background job can) and make directories wherever that points. The channel cannot move a
    // directory out of its own mount, so one judged after it was opened stays where it was judged.
    const names = rest.split(sep);
    let parent = await this.openDir(dir, real, "rw", names[0]);
    try {
      for (const [i, name] of names.entries()) {
        const at = `/proc/self/fd/${parent.fd}/${name}`;
        const made = await mkdir(at).then(
          () => true,
          (err: NodeJS.ErrnoException) => {
            if (err.code !== "EEXIST") throw new PathRefusedError(`${dir}: ${err.message.replace(at, name)}`);
            return false;
          },
        );
        // lchown: the name may have been swapped for a link since; never through it.
        if (made && this.owner()) await lchown(at, this.identity!.uid, this.identity!.gid).catch(() => {});
        if (i === names.length - 1) break;
        const next = await this.openDir(dir, at, "rw", names[i + 1]);
        await parent.close();
        parent = next;
      }
    } finally {
      await parent.close();
    }
  }

  /** The runner is not the channel's uid (root): what the tools create is handed over. */
  private owner(): boolean {
    return this.identity !== undefined && typeof process.getuid === "function" && process.getuid() !== this.identity.uid;
  }

  private async handOver(fh: FileHandle): Promise<void> {
    if (this.owner()) await fh.chown(this.identity!.uid, this.identity!.gid);
  }

  /** Refused unless the channel's uid has `want` on `real` and may search every directory on the way. */
  private async requireRights(shown: string, real: string, want: number, what = "", st?: { uid: number; gid: number; mode: number }): Promise<void> {
    if (!this.identity) return;
    const blocked = await unsearchableDir(this.view, this.identity, real);
    if (blocked) throw new PathRefusedError(`${shown}: permission denied (the directory ${blocked} is closed to this channel's user)`);
    const s = st ?? (await lstat(real).catch(() => undefined));
    if (s && !mayAccess(s, this.identity, want)) {
      const verb = want & W_OK ? "write" : want & R_OK ? "read" : "search";
      throw new PathRefusedError(`${shown}: permission denied (${what ? `${what} ${real}` : "the file"} is not ${verb === "write" ? "writable" : verb === "read" ? "readable" : "searchable"} by this channel's user, uid ${this.identity.uid}; bash cannot ${verb} it either)`);
    }
  }

  private async realExisting(path: string): Promise<string> {
    const abs = resolve(this.view.channelDir, path);
    try {
      return await realpath(abs);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Do not say whether a hidden path exists.
      if (modeAt(this.view, abs) === "hidden") throw this.refused(path, "hidden");
      if (code === "ENOENT") throw new PathRefusedError(`${path}: no such file or directory`);
      throw new PathRefusedError(`${path}: ${(err as Error).message}`);
    }
  }

  private async openChecked(shown: string, real: string, flags: number, need: MountMode, created = false): Promise<FileHandle> {
    // The file is opened by its name inside its directory, opened and judged first: opened by its
    // whole path, a directory on the way that the channel swapped for a symlink since `realpath`
    // would be followed, and the open itself (O_CREAT makes a file, a device acts on being opened)
    // would happen outside the view before the check below could refuse it.
    const dir = await this.openDir(shown, dirname(real), need, basename(real));
    let fh: FileHandle;
    try {
      fh = await open(`/proc/self/fd/${dir.fd}/${basename(real)}`, flags, 0o644);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ELOOP") throw new PathRefusedError(`${shown}: changed into a symlink while being opened; refused`);
      throw new PathRefusedError(`${shown}: ${(err as Error).message}`);
    } finally {
      await dir.close();
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new PathRefusedError(`${shown}: not a regular file (directories, FIFOs, devices and sockets cannot be ${need === "rw" ? "written" : "read"} with this tool)`);
      const actual = await readlink(`/proc/self/fd/${fh.fd}`).catch(() => real);
      this.require(shown, actual, need);
      // A file just created here is the channel's (handed over next); anything else must allow it.
      if (!created) await this.requireRights(shown, actual, need === "rw" ? W_OK : R_OK, "", st);
      return fh;
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  /**
   * The directory `path` (symlinks followed), judged by where the kernel says it is: the view must
   * allow `need` there, or at its entry `child` when given (a file the caller opens in it).
   */
  private async openDir(shown: string, path: string, need: MountMode, child?: string): Promise<FileHandle> {
    let dir: FileHandle;
    try {
      dir = await open(path, DIR_FLAGS);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new PathRefusedError(code === "ENOTDIR" ? `${shown}: ${basename(path)} is not a directory` : `${shown}: ${(err as Error).message.replace(path, shown)}`);
    }
    try {
      const actual = await readlink(`/proc/self/fd/${dir.fd}`);
      this.require(shown, child === undefined ? actual : join(actual, child), need);
      return dir;
    } catch (err) {
      await dir.close();
      throw err;
    }
  }

  private require(shown: string, real: string, need: MountMode): void {
    const mode = modeAt(this.view, real);
    if (mode === "hidden" || (need === "rw" && mode !== "rw")) throw this.refused(shown, mode);
  }

  private refused(shown: string, mode: MountMode): PathRefusedError {
    return mode === "hidden"
      ? new PathRefusedError(`${shown}: not visible to this channel (its own directory ${this.view.channelDir}, the shared workspace files and the system are)`)
      : new PathRefusedError(`${shown}: read-only for this channel (it may write only in ${this.view.channelDir} and the shared workspace files)`);
  }
}
