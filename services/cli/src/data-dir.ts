import { statSync } from "node:fs";
import { CommandError } from "./command-error.js";

/**
 * Commands other than `mom up` work on a data dir that must already be there: a typo must not
 * create a new one (nor pass as an empty configuration).
 */
export function existingDataDir(dir: string): string {
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    throw new CommandError(`no data dir ${dir} (\`mom up ${dir}\` creates one; dataDir defaults to ./data)`);
  }
  if (!isDir) throw new CommandError(`${dir} is not a directory (expected a data dir)`);
  return dir;
}
