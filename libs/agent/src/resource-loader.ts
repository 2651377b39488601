import { createExtensionRuntime, type ResourceLoader, type Skill } from "@mariozechner/pi-coding-agent";

/**
 * mom owns its prompt: no extensions, skills, templates or AGENTS.md are discovered from the host
 * (that would leak the operator's ~/.pi into every channel). AgentSession.prompt() re-reads the
 * system prompt from here before each run, so the runner sets it just before prompting.
 */
export class MomResourceLoader implements ResourceLoader {
  systemPrompt = "";
  /** pi lists these under the prompt (name, description, SKILL.md path) and expands /skill:name. */
  skills: Skill[] = [];

  getExtensions() {
    return { extensions: [], errors: [], runtime: createExtensionRuntime() };
  }
  getSkills() {
    return { skills: this.skills, diagnostics: [] };
  }
  getPrompts() {
    return { prompts: [], diagnostics: [] };
  }
  getThemes() {
    return { themes: [], diagnostics: [] };
  }
  getAgentsFiles() {
    return { agentsFiles: [] };
  }
  getSystemPrompt() {
    return this.systemPrompt;
  }
  getAppendSystemPrompt() {
    return [];
  }
  extendResources() {}
  async reload() {}
}
