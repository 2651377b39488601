import type { FileOutcome, SharedFile } from "./shared-files.js";

/** The files of a run's or a post's outcomes that can be uploaded, apart from the lines saying why others cannot. */
export function partitionOutcomes(outcomes: FileOutcome[]): { files: SharedFile[]; problems: string[] } {
  const files: SharedFile[] = [];
  const problems: string[] = [];
  for (const o of outcomes) {
    if ("problem" in o) problems.push(o.problem);
    else files.push(o.file);
  }
  return { files, problems };
}
