import { createHash } from "node:crypto";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { basename, dirname, join, relative, resolve } from "node:path";
import Type from "typebox";
import { Value } from "typebox/value";
import { errorMessage } from "./tool-schema.js";

/** `data/tool-approvals.json`: which content of each workspace tool an admin approved. */
export const TOOL_APPROVALS_FILE = "tool-approvals.json";

const ApprovalsSchema = Type.Object({
  approvals: Type.Record(Type.String(), Type.Object({ sha256: Type.String({ pattern: "^[0-9a-f]{64}$" }), approvedAt: Type.String() })),
});
export interface ToolApproval {
  sha256: string;
  approvedAt: string;
}
export type ToolApprovals = Record<string, ToolApproval>;

/** The digest of what a tool runs, and the files it covers (relative to the tools dir). */
export interface ToolDigest {
  sha256: string;
  files: string[];
}

const MAX_DEPTH = 12;

/**
 * Hashes every file of the tool's directory (node_modules included: it is code too) and of the
 * tools dir's `_` helper directories, which tools import as `../_lib/…`: changing any of them
 * changes what the tool runs, so it changes the digest. Symlinks are followed, so a link's
 * target is part of it as well.
 */
export async function toolDigest(toolDir: string): Promise<ToolDigest> {
  const root = dirname(toolDir);
  const dirs = [toolDir];
  for (const name of (await readdir(root)).sort()) {
    if (name.startsWith("_") && (await stat(join(root, name)).catch(() => undefined))?.isDirectory()) dirs.push(join(root, name));
  }
  const hash = createHash("sha256");
  const files: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH) throw new Error(`${relative(root, dir)} is nested deeper than ${MAX_DEPTH} directories`);
    for (const name of (await readdir(dir)).sort()) {
      const p = join(dir, name);
      const s = await stat(p);
      if (s.isDirectory()) await walk(p, depth + 1);
      else if (s.isFile()) {
        const rel = relative(root, p);
        files.push(rel);
        hash.update(`${rel}\0${s.size}\0`);
        hash.update(await readFile(p));
      }
    }
  };
  for (const d of dirs) await walk(d, 0);
  return { sha256: hash.digest("hex"), files };
}

/** Reads the approvals; a missing file means none. An invalid file is an error naming the file. */
export function readToolApprovals(file: string): ToolApprovals {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return {};
    throw e;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new Error(`${file}: not valid JSON (${errorMessage(e)})`);
  }
  if (!Value.Check(ApprovalsSchema, raw)) {
    const first = [...Value.Errors(ApprovalsSchema, raw)][0];
    throw new Error(`${file}: ${first ? `${first.instancePath || "/"} ${first.message}` : "invalid"}`);
  }
  return raw.approvals;
}

/** Records `name` as approved with this digest (0600, atomically, as auth-profiles.json). */
export function approveTool(file: string, name: string, sha256: string, now = new Date()): void {
  const approvals = { ...readToolApprovals(file), [name]: { sha256, approvedAt: now.toISOString() } };
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ approvals }, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

export type ToolApprovalState = { state: "approved"; digest: ToolDigest } | { state: "new" | "changed"; digest: ToolDigest };

/** Whether the tool in `toolDir` is approved as it is now. */
export async function toolApprovalState(approvals: ToolApprovals, toolDir: string): Promise<ToolApprovalState> {
  const digest = await toolDigest(toolDir);
  const approved = approvals[basename(toolDir)];
  if (!approved) return { state: "new", digest };
  return { state: approved.sha256 === digest.sha256 ? "approved" : "changed", digest };
}

/**
 * The registry's admission check for the workspace's tools dir: a tool loads (and is even probed)
 * only when its current digest is the approved one. Tools of other dirs (the operator's global
 * dir) are admitted as they are.
 */
export function requireApproval(approvalsFile: string, workspaceToolsDir: string): (toolDir: string) => Promise<string | undefined> {
  const guarded = resolve(workspaceToolsDir);
  return async (toolDir) => {
    if (dirname(resolve(toolDir)) !== guarded) return undefined;
    const name = basename(toolDir);
    try {
      const { state, digest } = await toolApprovalState(readToolApprovals(approvalsFile), toolDir);
      if (state === "approved") return undefined;
      return `not loaded: ${state === "new" ? "a new tool" : "changed since it was approved"} (sha256 ${digest.sha256.slice(0, 12)}); an admin reviews it and runs: mom tools approve ${name}`;
    } catch (e) {
      return `not loaded: approval cannot be checked: ${errorMessage(e)}`;
    }
  };
}
