import { type FileHandle, open } from "node:fs/promises";

/**
 * Appends one line with a single write on an O_APPEND handle, so a crash can at worst leave a torn
 * final line. If the file already ends in such a torn line, a "\n" goes first: the torn fragment
 * stays on a line of its own (reported and skipped by readers) and the new line is intact.
 * Resolves with the file's size after the line. `wholeAt`: the file's size, from a caller that
 * knows the file ends with a whole line (its own last append; the size unchanged since): the look
 * for a torn line, two file operations of the five, is skipped. `file`: a path, or a function
 * that opens the file for appending and reading (a channel's files: see beneath.ts).
 */
export async function appendLine(file: string | (() => Promise<FileHandle>), line: string, wholeAt?: number): Promise<number> {
  const handle = typeof file === "string" ? await open(file, wholeAt === undefined ? "a+" : "a") : await file();
  try {
    if (wholeAt !== undefined) return wholeAt + (await writeAll(handle, `${line}\n`));
    let { size } = await handle.stat();
    if (size > 0) {
      const last = Buffer.alloc(1);
      await handle.read(last, 0, 1, size - 1);
      if (last[0] !== 0x0a) size += await writeAll(handle, "\n");
    }
    return size + (await writeAll(handle, `${line}\n`));
  } finally {
    await handle.close();
  }
}

async function writeAll(handle: FileHandle, text: string): Promise<number> {
  const bytes = Buffer.from(text, "utf8");
  const { bytesWritten } = await handle.write(bytes, 0, bytes.length);
  // A short write (disk full) leaves a torn line; the next append repairs it as above.
  if (bytesWritten !== bytes.length) throw new Error(`short write: ${bytesWritten} of ${bytes.length} bytes`);
  return bytesWritten;
}
