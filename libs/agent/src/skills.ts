import { loadSkillsFromDir, type Skill } from "@mariozechner/pi-coding-agent";
import type { ConfinedFiles } from "@mom/sandbox";
import { realpathSync } from "node:fs";

export interface LoadedSkills {
  skills: Skill[];
  /** Skills that could not be loaded (bad front matter, missing description…), for the log. */
  problems: string[];
}

/**
 * Workspace skills (`workspace/skills/<name>/SKILL.md`) plus the channel's own
 * (`channels/…/skills/`); on a name clash the channel's wins. Read fresh before every run, so a
 * skill the agent just wrote is there the next time. A skill whose file is not visible to the
 * channel (a symlink into another channel) is skipped.
 */
export function loadMomSkills(workspaceSkillsDir: string, channelSkillsDir: string, files: ConfinedFiles): LoadedSkills {
  const byName = new Map<string, Skill>();
  const problems: string[] = [];
  for (const [dir, source] of [
    [workspaceSkillsDir, "workspace"],
    [channelSkillsDir, "channel"],
  ] as const) {
    const { skills, diagnostics } = loadSkillsFromDir({ dir, source });
    for (const s of skills) {
      if (visible(files, s.filePath)) byName.set(s.name, s);
      else problems.push(`${s.filePath}: not visible to this channel; skipped`);
    }
    for (const d of diagnostics) problems.push(`${d.path ?? dir}: ${d.message}`);
  }
  return { skills: [...byName.values()], problems };
}

function visible(files: ConfinedFiles, path: string): boolean {
  try {
    return files.isVisible(realpathSync(path));
  } catch {
    return false;
  }
}
