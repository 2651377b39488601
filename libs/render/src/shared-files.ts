import { type FileSource, FileTooLargeError } from "@mom/bus";
import type { Dialect } from "./dialect.js";
import type { Ev } from "./run-view.js";

/** A file the agent shared, with its bytes, ready to upload. */
export interface SharedFile {
  filename: string;
  /** What to call it: the title the agent gave, else the file name. */
  title: string;
  bytes: Uint8Array;
  mimeType?: string;
}

/** A file to upload, or the line that says why it cannot be. */
export type FileOutcome = { file: SharedFile } | { problem: string };

/** Reads an `attachment` event's bytes from the files bucket; never throws. */
export async function fetchSharedFile(files: Pick<FileSource, "getFile">, ev: Ev<"attachment">, maxBytes: number, d: Dialect): Promise<FileOutcome> {
  const title = ev.title || ev.filename;
  const problem = (why: string) => ({ problem: `${d.marks.file} ${d.escape(title)}: ${why}.` });
  try {
    const bytes = await files.getFile(ev.objectKey, { maxBytes });
    if (!bytes) return problem("not available any more (expired from the file store)");
    return { file: { filename: ev.filename, title, bytes, ...(ev.mimeType && { mimeType: ev.mimeType }) } };
  } catch (err) {
    if (err instanceof FileTooLargeError) return problem("larger than the attachment limit");
    return problem(`could not be sent (${d.escape((err as Error).message)})`);
  }
}
