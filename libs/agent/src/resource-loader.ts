import type { Api, Model } from "@mariozechner/pi-ai";
import {
  type CompactionResult,
  createExtensionRuntime,
  createSyntheticSourceInfo,
  type Extension,
  type ResourceLoader,
  type SessionBeforeCompactEvent,
  type Skill,
} from "@mariozechner/pi-coding-agent";

/** Makes a compaction summary instead of pi (see `guardedCompaction`). */
export type CompactWith = (event: SessionBeforeCompactEvent, model: Model<Api>) => Promise<CompactionResult>;

/**
 * mom owns its prompt: no extensions, skills, templates or AGENTS.md are discovered from the host
 * (that would leak the operator's ~/.pi into every channel). AgentSession.prompt() re-reads the
 * system prompt from here before each run, so the runner sets it just before prompting.
 */
export class MomResourceLoader implements ResourceLoader {
  systemPrompt = "";
  /** pi lists these under the prompt (name, description, SKILL.md path) and expands /skill:name. */
  skills: Skill[] = [];

  /** Set by the runner's model guard: compaction summaries then go through it too. */
  compactWith?: CompactWith;

  // One built-in hook, no discovered extensions: pi asks `session_before_compact` handlers for a
  // summary before it makes one itself with a direct, unguarded model call.
  getExtensions() {
    const onCompact = async (event: SessionBeforeCompactEvent, ctx: { model: Model<Api> | undefined }) => {
      if (!this.compactWith || !ctx.model) return undefined;
      try {
        return { compaction: await this.compactWith(event, ctx.model) };
      } catch {
        // A thrown handler would make pi compact itself, past the guard: cancel instead (the
        // guard already reported a refusal of its own).
        return { cancel: true };
      }
    };
    const mom: Extension = {
      path: "<mom>",
      resolvedPath: "<mom>",
      sourceInfo: createSyntheticSourceInfo("<mom>", { source: "mom" }),
      handlers: new Map([["session_before_compact", [onCompact as Extension["handlers"] extends Map<string, (infer H)[]> ? H : never]]]),
      tools: new Map(),
      messageRenderers: new Map(),
      commands: new Map(),
      flags: new Map(),
      shortcuts: new Map(),
    };
    return { extensions: [mom], errors: [], runtime: createExtensionRuntime() };
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
