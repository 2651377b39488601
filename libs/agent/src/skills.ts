import { loadSkillsFromDir, type Skill } from "@mariozechner/pi-coding-agent";

export interface LoadedSkills {
  skills: Skill[];
  /** Skills that could not be loaded (bad front matter, missing description…), for the log. */
  problems: string[];
}

/**
 * Workspace skills (`workspace/skills/<name>/SKILL.md`) plus the channel's own
 * (`channels/…/skills/`); on a name clash the channel's wins. Read fresh before every run, so a
 * skill the agent just wrote is there the next time.
 */
export function loadMomSkills(workspaceSkillsDir: string, channelSkillsDir: string): LoadedSkills {
  const byName = new Map<string, Skill>();
  const problems: string[] = [];
  for (const [dir, source] of [
    [workspaceSkillsDir, "workspace"],
    [channelSkillsDir, "channel"],
  ] as const) {
    const { skills, diagnostics } = loadSkillsFromDir({ dir, source });
    for (const s of skills) byName.set(s.name, s);
    for (const d of diagnostics) problems.push(`${d.path ?? dir}: ${d.message}`);
  }
  return { skills: [...byName.values()], problems };
}
