import type { Skill } from "@mariozechner/pi-coding-agent";
import { readTailBeneath, RefusedPathError } from "@mom/store";
import { join } from "node:path";

/** Most bytes of one MEMORY.md (global or channel) that go into the system prompt. */
export const MEMORY_MAX_BYTES = 16 * 1024;
/** Most characters of a skill's description in the prompt (the Agent Skills spec's own limit). */
export const SKILL_DESCRIPTION_MAX_CHARS = 1024;

export interface PromptFile {
  text: string;
  /** Why the file was skipped or cut, for the runner's log. */
  problem?: string;
}

/**
 * A MEMORY.md as the prompt gets it. Notes are appended, so the end of an oversized file is the
 * newest: only its last MEMORY_MAX_BYTES are read (never the whole file), after a note saying
 * what was left out and where it is. A missing file is an empty memory; one that is not a
 * regular file directly in `root` (a directory, a FIFO, a symlink — never followed, so never to
 * another channel's memory) is skipped and reported.
 */
export async function readMemoryFile(root: string, name = "MEMORY.md"): Promise<PromptFile> {
  const path = join(root, name);
  let got: { data: Buffer; size: number } | undefined;
  try {
    got = await readTailBeneath(root, name, MEMORY_MAX_BYTES);
  } catch (err) {
    const why = err instanceof RefusedPathError ? err.why : (err as Error).message;
    return { text: "", problem: `${path}: ${why}; memory skipped` };
  }
  if (!got) return { text: "" };
  if (got.size <= MEMORY_MAX_BYTES) return { text: got.data.toString("utf8") };
  const nl = got.data.indexOf(0x0a);
  const tail = (nl === -1 ? got.data : got.data.subarray(nl + 1)).toString("utf8");
  const note =
    `[${path} is ${got.size.toLocaleString("en")} bytes; only its last ${tail.length.toLocaleString("en")} characters (the newest notes) are shown here. ` +
    "The rest is in the file: read it when you need it, and keep the file short — summarise it and move details into other files.]";
  return { text: `${note}\n${tail}`, problem: `${path}: ${got.size} bytes, more than the ${MEMORY_MAX_BYTES} a prompt takes; only its end is shown` };
}

/** Skills as the prompt lists them: a description too long to list is cut, with where to read it whole. */
export function boundedSkills(skills: Skill[]): { skills: Skill[]; problems: string[] } {
  const problems: string[] = [];
  const out = skills.map((s) => {
    if (s.description.length <= SKILL_DESCRIPTION_MAX_CHARS) return s;
    problems.push(`${s.filePath}: description of ${s.description.length} characters cut to ${SKILL_DESCRIPTION_MAX_CHARS} in the prompt`);
    return { ...s, description: `${s.description.slice(0, SKILL_DESCRIPTION_MAX_CHARS)}… [cut; the whole description is in ${s.filePath}]` };
  });
  return { skills: out, problems };
}
