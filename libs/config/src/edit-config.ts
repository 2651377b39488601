import { writeFileSync } from "node:fs";
import { readJsonFile, schemaChecker } from "./json-file.js";
import { MomConfigFile } from "./schema.js";

const check = schemaChecker(MomConfigFile);

/**
 * Changes data/config.json in place for a command (e.g. `mom auth order`): the file's own keys
 * stay as written (no defaults are added), and the result must still be a valid config.
 */
export function editConfigFile(file: string, change: (raw: Record<string, any>) => void): void {
  const raw = (readJsonFile(file, file, check) ?? {}) as Record<string, any>;
  change(raw);
  const issues = check(raw);
  if (issues.length) throw new Error(`${file}: the change would make it invalid: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`);
  writeFileSync(file, `${JSON.stringify(raw, null, 2)}\n`);
}
