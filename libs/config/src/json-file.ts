import { lstatSync, readFileSync, readlinkSync } from "node:fs";
import type { TSchema } from "typebox";
import { Compile } from "typebox/compile";
import { ConfigError } from "./config-error.js";
import { locateJsonError } from "./json-syntax.js";
import { schemaIssues, type Issue } from "./schema-issues.js";

/**
 * Reads a JSON file an operator writes; undefined when it does not exist. A syntax error names
 * line and column; `check` lists schema (and other) problems, each naming its JSON path.
 */
export function readJsonFile(file: string, shown: string, check: (raw: unknown) => Issue[]): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") {
      // A symlink to nothing is a file the operator meant to be there: starting on defaults would hide it.
      const target = danglingTarget(file);
      if (target === undefined) return undefined;
      throw new ConfigError(shown, [{ path: "", message: `is a symlink to ${target}, which does not exist` }]);
    }
    throw new ConfigError(shown, [{ path: "", message: `cannot read: ${(err as Error).message}` }]);
  }
  // Editors on Windows like to save a byte-order mark; it is not a syntax error worth a stop.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    const at = locateJsonError(text);
    const where = at ? `line ${at.line}, column ${at.column}: ${at.reason}` : (err as Error).message;
    const hint = text.trim() === "" ? " (the file is empty; write {} to take every default)" : "";
    throw new ConfigError(shown, [{ path: "", message: `invalid JSON at ${where}${hint}` }]);
  }
  const issues = check(raw);
  if (issues.length > 0) throw new ConfigError(shown, issues);
  return raw;
}

/** Schema problems of `raw`, worded for people. */
export function schemaChecker(schema: TSchema): (raw: unknown) => Issue[] {
  const compiled = Compile(schema);
  return (raw) => {
    if (compiled.Check(raw)) return [];
    const issues = schemaIssues(schema, raw);
    if (issues.length > 0) return issues;
    // Our explainer missed a keyword; TypeBox's own wording is still better than nothing.
    return [...compiled.Errors(raw)].map((e) => ({ path: e.instancePath || "/", message: e.message }));
  };
}

/** Where a symlink at `file` points, when it is one; undefined when nothing is at `file`. */
function danglingTarget(file: string): string | undefined {
  try {
    return lstatSync(file).isSymbolicLink() ? readlinkSync(file) : undefined;
  } catch {
    return undefined;
  }
}
