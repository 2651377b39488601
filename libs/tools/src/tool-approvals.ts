import type { ToolFileChange, WorkspaceToolReview } from "@mom/contracts";
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from "diff";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { basename, dirname, join, relative, resolve } from "node:path";
import Type from "typebox";
import { Value } from "typebox/value";
import { TOOL_ENTRY_FILES } from "./custom-tools.js";
import { errorMessage } from "./tool-schema.js";

/** `data/tool-approvals.json`: which content of each workspace tool an admin approved. */
export const TOOL_APPROVALS_FILE = "tool-approvals.json";

/**
 * `data/tool-approved/<name>.json`: a copy of what was approved (the text of its small text files,
 * the digest of every file), so that a changed tool can be shown as a diff against it.
 */
export const TOOL_APPROVED_COPIES_DIR = "tool-approved";

const ApprovalsSchema = Type.Object({
  approvals: Type.Record(
    Type.String(),
    Type.Object({ sha256: Type.String({ pattern: "^[0-9a-f]{64}$" }), approvedAt: Type.String(), approvedBy: Type.Optional(Type.String()) }),
  ),
});
export interface ToolApproval {
  sha256: string;
  approvedAt: string;
  /** Who approved it (`mom tools approve`: the user running it; the web console: "<name> (console)") */
  approvedBy?: string;
}
export type ToolApprovals = Record<string, ToolApproval>;

/** The digest of what a tool runs, and the files it covers (relative to the tools dir). */
export interface ToolDigest {
  sha256: string;
  files: string[];
}

const MAX_DEPTH = 12;

/** Text files up to this size (outside node_modules) are copied at approval, for the diff. */
const COPY_TEXT_MAX_BYTES = 64 * 1024;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Tool directories of a tools dir, as the registry scans them (`_` helpers and node_modules are not tools). */
export function workspaceToolDirs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => !n.startsWith(".") && !n.startsWith("_") && n !== "node_modules" && statSync(join(dir, n)).isDirectory())
    .filter((n) => TOOL_ENTRY_FILES.some((f) => existsSync(join(dir, n, f))))
    .sort();
}

/**
 * Every file of the tool's directory (node_modules included: it is code too) and of the tools
 * dir's `_` helper directories, which tools import as `../_lib/…`, in a fixed order. Symlinks are
 * followed, so a link's target is part of it as well.
 */
async function walkToolFiles(toolDir: string, visit: (rel: string, data: Buffer) => void): Promise<void> {
  const root = dirname(toolDir);
  const dirs = [toolDir];
  for (const name of (await readdir(root)).sort()) {
    if (name.startsWith("_") && (await stat(join(root, name)).catch(() => undefined))?.isDirectory()) dirs.push(join(root, name));
  }
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH) throw new Error(`${relative(root, dir)} is nested deeper than ${MAX_DEPTH} directories`);
    for (const name of (await readdir(dir)).sort()) {
      const p = join(dir, name);
      const s = await stat(p);
      if (s.isDirectory()) await walk(p, depth + 1);
      else if (s.isFile()) visit(relative(root, p), await readFile(p));
    }
  };
  for (const d of dirs) await walk(d, 0);
}

/** A tool as it is now: its digest, and per file its own digest and (small text files) its text. */
interface ToolCopy extends ToolDigest {
  copies: Record<string, { sha256: string; size: number; text?: string }>;
}

async function toolCopy(toolDir: string): Promise<ToolCopy> {
  const copies: ToolCopy["copies"] = {};
  const digest = await toolDigest(toolDir, (rel, data) => {
    copies[rel] = { sha256: createHash("sha256").update(data).digest("hex"), size: data.length, ...textOf(rel, data) };
  });
  return { ...digest, copies };
}

function textOf(rel: string, data: Buffer): { text?: string } {
  if (data.length > COPY_TEXT_MAX_BYTES || rel.split("/").includes("node_modules") || data.includes(0)) return {};
  try {
    return { text: strictUtf8.decode(data) };
  } catch {
    return {};
  }
}

/** The digest of what a tool runs (every file of it and of the `_` helper dirs), and the files it covers (relative to the tools dir). */
export async function toolDigest(toolDir: string, eachFile?: (rel: string, data: Buffer) => void): Promise<ToolDigest> {
  // The registry asks this at every reload: per-file copies only for an approval or a review (`eachFile`).
  const hash = createHash("sha256");
  const files: string[] = [];
  await walkToolFiles(toolDir, (rel, data) => {
    files.push(rel);
    hash.update(`${rel}\0${data.length}\0`);
    hash.update(data);
    eachFile?.(rel, data);
  });
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

/**
 * Records the tool in `toolDir` as approved as it is now (0600, atomically, as auth-profiles.json),
 * with a copy of it beside the approvals file for later diffs. With `expectSha256` (what the
 * person reviewed), a tool that changed since is refused instead.
 */
export async function approveTool(file: string, toolDir: string, opts: { expectSha256?: string; by?: string; now?: Date } = {}): Promise<ToolDigest> {
  const name = basename(toolDir);
  const copy = await toolCopy(toolDir);
  if (opts.expectSha256 !== undefined && copy.sha256 !== opts.expectSha256) {
    throw new Error(`${name} changed since it was reviewed (sha256 ${opts.expectSha256.slice(0, 12)} reviewed, ${copy.sha256.slice(0, 12)} now): review it again`);
  }
  const dir = join(dirname(file), TOOL_APPROVED_COPIES_DIR);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeAtomic(join(dir, `${name}.json`), { sha256: copy.sha256, files: copy.copies });
  const approval: ToolApproval = { sha256: copy.sha256, approvedAt: (opts.now ?? new Date()).toISOString(), ...(opts.by && { approvedBy: opts.by }) };
  writeAtomic(file, { approvals: { ...readToolApprovals(file), [name]: approval } });
  return { sha256: copy.sha256, files: copy.files };
}

function writeAtomic(file: string, value: unknown): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

/** Most of one file's diff the review carries, and of all of them: the review travels in one NATS message. */
const DIFF_FILE_MAX_CHARS = 48 * 1024;
const DIFF_TOTAL_MAX_CHARS = 384 * 1024;

/**
 * Every workspace tool with its approval state and, for a new or changed one, what differs from
 * the approved copy (a new tool: every file, as added). What the web console shows (the runner
 * answers it on the bus).
 */
export async function reviewWorkspaceTools(file: string, toolsDir: string): Promise<WorkspaceToolReview[]> {
  const approvals = readToolApprovals(file);
  let budget = DIFF_TOTAL_MAX_CHARS;
  const out: WorkspaceToolReview[] = [];
  for (const name of workspaceToolDirs(toolsDir)) {
    const now = await toolCopy(join(toolsDir, name));
    const approved = approvals[name];
    const state = !approved ? "new" : approved.sha256 === now.sha256 ? "approved" : "changed";
    const before = approved ? readApprovedCopy(join(dirname(file), TOOL_APPROVED_COPIES_DIR, `${name}.json`), approved.sha256) : { files: {} };
    const changes: ToolFileChange[] = [];
    if (state !== "approved") {
      for (const path of [...new Set([...Object.keys(before?.files ?? {}), ...now.files])].sort()) {
        const a = before?.files[path];
        const b = now.copies[path];
        if (a && b && a.sha256 === b.sha256) continue;
        // Without a copy of the approved version every file is shown as it is now.
        const change = !before ? "changed" : !a ? "added" : !b ? "removed" : "changed";
        const c: ToolFileChange = { path, change, ...(!before && { note: "no copy of the approved version was kept: the file as it is now" }) };
        if ((a && a.text === undefined) || (b && b.text === undefined)) {
          c.note = `not shown (binary, over ${COPY_TEXT_MAX_BYTES / 1024} KiB, or under node_modules): ${a ? `${a.size} bytes` : "none"} → ${b ? `${b.size} bytes` : "none"}`;
        } else {
          let diff = createTwoFilesPatch(a ? `approved/${path}` : "/dev/null", b ? `now/${path}` : "/dev/null", a?.text ?? "", b?.text ?? "", undefined, undefined, { context: 3, headerOptions: FILE_HEADERS_ONLY });
          const cap = Math.min(DIFF_FILE_MAX_CHARS, budget);
          if (diff.length > cap) {
            diff = diff.slice(0, cap);
            c.note = `${c.note ? `${c.note}; ` : ""}diff clipped at ${cap} characters`;
          }
          budget -= diff.length;
          c.diff = diff;
        }
        changes.push(c);
      }
    }
    out.push({
      name,
      state,
      sha256: now.sha256,
      files: now.files.length,
      ...(approved && { approved: { sha256: approved.sha256, approvedAt: approved.approvedAt, ...(approved.approvedBy && { approvedBy: approved.approvedBy }) } }),
      copyKept: before !== undefined,
      changes,
    });
  }
  return out;
}

/** The copy kept when `sha256` was approved; undefined when none was (approved before copies were kept) or it is of another approval. */
function readApprovedCopy(file: string, sha256: string): { files: ToolCopy["copies"] } | undefined {
  try {
    const raw = JSON.parse(readFileSync(file, "utf8")) as { sha256?: string; files?: ToolCopy["copies"] };
    return raw.sha256 === sha256 && raw.files && typeof raw.files === "object" ? { files: raw.files } : undefined;
  } catch {
    return undefined;
  }
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
