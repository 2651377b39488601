import { createSyntheticSourceInfo, parseFrontmatter, type Skill } from "@mariozechner/pi-coding-agent";
import { DirBeneath, readRange, RefusedPathError } from "@mom/store";
import { basename, dirname, join } from "node:path";

export interface LoadedSkills {
  skills: Skill[];
  /** Skills and entries that were skipped (bad front matter, a symlink, a FIFO, too large…), for the log and the prompt. */
  problems: string[];
}

/** Most bytes of one SKILL.md (front matter and instructions); a larger one is skipped. */
export const SKILL_FILE_MAX_BYTES = 256 * 1024;
/** Most bytes of SKILL.md files read below one `skills/`; skills past it are skipped. */
export const SKILL_MAX_TOTAL_BYTES = 8 * 1024 * 1024;
/**
 * Most bytes of YAML front matter parsed for one SKILL.md, and for all of one `skills/`. The yaml
 * library parses synchronously on the runner's event loop and checks each key of a mapping
 * against all the ones before it: 100 KB of `kN: v` lines took 2 s, 240 KB 12 s, on every run.
 * Even linear YAML costs ~1.5 ms per KB. The Agent Skills fields (a name of 64 characters, a
 * description of 1,024, a short compatibility note, a little metadata) fit in a few hundred bytes.
 */
export const SKILL_FRONTMATTER_MAX_BYTES = 8 * 1024;
export const SKILL_FRONTMATTER_MAX_TOTAL_BYTES = 128 * 1024;
/** How deep below `skills/` a SKILL.md is looked for. */
export const SKILL_MAX_DEPTH = 4;
/** Most directory entries looked at below one `skills/` (the rest are not walked, and that is said). */
export const SKILL_MAX_ENTRIES = 2000;
/** Most skills taken from one `skills/`. */
export const SKILL_MAX_COUNT = 200;
const MAX_NAME_LENGTH = 64;

/**
 * Workspace skills (`workspace/skills/<name>/SKILL.md`) plus the channel's own
 * (`channels/…/skills/`); on a name clash the channel's wins. Read fresh before every run, so a
 * skill the agent just wrote is there the next time.
 *
 * mom walks these directories itself instead of handing them to pi's loadSkillsFromDir, which
 * reads synchronously and follows symlinks (a FIFO named `.gitignore` blocked the runner for
 * good; `ln -s / skills/host` walked the host). The walk is asynchronous and bounded (depth,
 * entries, skills, bytes per SKILL.md), opens everything beneath its root without following a
 * symlink (@mom/store's beneath.ts), reads regular files only, and skips what it cannot use with
 * a problem saying why. Discovery is pi's: a directory with a SKILL.md is a skill (not walked
 * further); `.md` files directly in `skills/` are skills too; names starting with `.` and
 * `node_modules` are not walked. Ignore files (.gitignore, .ignore, .fdignore) are not read.
 */
export async function loadMomSkills(workspaceDir: string, channelDir: string): Promise<LoadedSkills> {
  const byName = new Map<string, Skill>();
  const problems: string[] = [];
  for (const [root, source] of [
    [workspaceDir, "workspace"],
    [channelDir, "channel"],
  ] as const) {
    const found: Skill[] = [];
    await walkRoot({ root, source, found, problems, entries: 0, bytes: 0, frontmatterBytes: 0 });
    for (const s of found) byName.set(s.name, s);
  }
  return { skills: [...byName.values()], problems };
}

interface Walk {
  root: string;
  source: string;
  found: Skill[];
  problems: string[];
  /** Directory entries looked at so far. */
  entries: number;
  /** SKILL.md bytes read so far. */
  bytes: number;
  /** Front matter bytes parsed so far. */
  frontmatterBytes: number;
}

/** Walks `skills/` beneath the root: each directory is opened once, relative to its parent's descriptor. */
async function walkRoot(w: Walk): Promise<void> {
  let dir: DirBeneath | undefined;
  try {
    dir = await DirBeneath.open(w.root, "skills");
  } catch (err) {
    w.problems.push(`${join(w.root, "skills")}: ${reason(err)}; skipped`);
    return;
  }
  if (!dir) return;
  try {
    await walk(w, dir, 0);
  } finally {
    await dir.close();
  }
}

async function walk(w: Walk, dir: DirBeneath, depth: number): Promise<void> {
  const where = join(w.root, dir.rel);
  // A directory with a SKILL.md is a skill: opened straight away (no listing), and not walked further.
  if (await load(w, dir, "SKILL.md")) return;
  let listed: Awaited<ReturnType<DirBeneath["list"]>>;
  try {
    listed = await dir.list(SKILL_MAX_ENTRIES - w.entries);
  } catch (err) {
    w.problems.push(`${where}: ${reason(err)}; skipped`);
    return;
  }
  w.entries += listed.entries.length;
  if (listed.truncated) w.problems.push(`${where}: more than ${SKILL_MAX_ENTRIES} entries under the skills directory; the rest were not looked at`);
  const entries = listed.entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    if (w.found.length >= SKILL_MAX_COUNT) {
      w.problems.push(`${where}: more than ${SKILL_MAX_COUNT} skills; the rest were not loaded`);
      return;
    }
    const path = join(where, e.name);
    if (e.kind === "symlink" || e.kind === "other") {
      w.problems.push(`${path}: ${kindProblem(e.kind)}; skipped`);
      continue;
    }
    if (e.name.startsWith(".") || e.name === "node_modules") continue;
    if (e.kind === "directory") {
      if (depth + 1 > SKILL_MAX_DEPTH) {
        w.problems.push(`${path}: more than ${SKILL_MAX_DEPTH} directories deep; not looked into`);
        continue;
      }
      let sub: DirBeneath | undefined;
      try {
        sub = await dir.dir(e.name);
      } catch (err) {
        w.problems.push(`${path}: ${reason(err)}; skipped`);
        continue;
      }
      if (!sub) continue;
      try {
        await walk(w, sub, depth + 1);
      } finally {
        await sub.close();
      }
    } else if (depth === 0 && e.name.endsWith(".md")) {
      await load(w, dir, e.name);
    }
  }
}

function kindProblem(kind: "symlink" | "other"): string {
  return kind === "symlink" ? "is a symlink (the runner never follows symlinks in a channel's directory)" : "is not a regular file or directory (a FIFO, socket or device)";
}

function reason(err: unknown): string {
  return err instanceof RefusedPathError ? err.why : (err as Error).message;
}

/**
 * One skill file, validated as pi does (its warnings kept); skipped without a description. False
 * when there is no such file; true when there is an entry of that name, loaded or not.
 */
async function load(w: Walk, dir: DirBeneath, file: string): Promise<boolean> {
  const filePath = join(w.root, dir.rel, file);
  let text: string;
  const budget = Math.min(SKILL_FILE_MAX_BYTES, SKILL_MAX_TOTAL_BYTES - w.bytes);
  try {
    const fh = await dir.file(file, "read");
    if (!fh) return false;
    try {
      const { size } = await fh.stat();
      if (size > budget) throw new RefusedPathError(file, `is ${size} bytes, more than the ${budget} the runner reads`);
      const bytes = await readRange(fh, 0, budget);
      w.bytes += bytes.length;
      text = bytes.toString("utf8");
    } finally {
      await fh.close();
    }
  } catch (err) {
    w.problems.push(`${filePath}: ${reason(err)}; skipped`);
    return true;
  }
  // Where pi's parseFrontmatter takes its YAML from: after the opening `---`, up to a line `---`.
  const end = text.startsWith("---") ? text.indexOf("\n---", 3) : -1;
  const yamlBytes = end < 0 ? 0 : Buffer.byteLength(text.slice(4, end));
  if (yamlBytes > SKILL_FRONTMATTER_MAX_BYTES) {
    w.problems.push(`${filePath}: its front matter is ${yamlBytes} bytes, more than the ${SKILL_FRONTMATTER_MAX_BYTES} the runner parses; skipped`);
    return true;
  }
  if (w.frontmatterBytes + yamlBytes > SKILL_FRONTMATTER_MAX_TOTAL_BYTES) {
    w.problems.push(`${filePath}: the front matter of the skills in ${join(w.root, "skills")} is more than ${SKILL_FRONTMATTER_MAX_TOTAL_BYTES} bytes in all, the most the runner parses; skipped`);
    return true;
  }
  w.frontmatterBytes += yamlBytes;
  let frontmatter: Record<string, unknown>;
  try {
    frontmatter = parseFrontmatter<Record<string, unknown>>(text).frontmatter;
  } catch (err) {
    w.problems.push(`${filePath}: ${(err as Error).message}`);
    return true;
  }
  const baseDir = dirname(filePath);
  const parent = basename(baseDir);
  const description = typeof frontmatter.description === "string" ? frontmatter.description : "";
  const name = typeof frontmatter.name === "string" && frontmatter.name ? frontmatter.name : parent;
  for (const m of nameProblems(name, parent)) w.problems.push(`${filePath}: ${m}`);
  if (!description.trim()) {
    w.problems.push(`${filePath}: description is required`);
    return true;
  }
  w.found.push({
    name,
    description,
    filePath,
    baseDir,
    sourceInfo: createSyntheticSourceInfo(filePath, { source: w.source, baseDir }),
    disableModelInvocation: frontmatter["disable-model-invocation"] === true,
  });
  return true;
}

// The Agent Skills spec's rules, as pi checks them (warnings: the skill still loads).
function nameProblems(name: string, parent: string): string[] {
  const out: string[] = [];
  if (name !== parent) out.push(`name "${name}" does not match parent directory "${parent}"`);
  if (name.length > MAX_NAME_LENGTH) out.push(`name exceeds ${MAX_NAME_LENGTH} characters (${name.length})`);
  if (!/^[a-z0-9-]+$/.test(name)) out.push("name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)");
  if (name.startsWith("-") || name.endsWith("-")) out.push("name must not start or end with a hyphen");
  if (name.includes("--")) out.push("name must not contain consecutive hyphens");
  return out;
}
