import type { ThinkingLevel } from "@mariozechner/pi-agent-core";
import type { AssistantMessage, Usage as PiUsage } from "@mariozechner/pi-ai";
import { type AgentSession, createAgentSession, SessionManager, SettingsManager } from "@mariozechner/pi-coding-agent";
import type { LogEntry, OutboundEventBody, StopReason, Usage } from "@mom/contracts";
import { mkdirSync } from "node:fs";
import { createMomTools, MOM_TOOL_NAMES } from "./labelled-tools.js";
import { formatChatLine, syncLogToSession } from "./log-sync.js";
import type { ResolvedModel } from "./model.js";
import { OutboundMapper } from "./outbound-mapper.js";
import { MomResourceLoader } from "./resource-loader.js";
import { buildSystemPrompt, type PromptUser } from "./system-prompt.js";

/** What the agent needs of a channel's storage (implemented by @mom/store's ChannelStore). */
export interface AgentChannelStore {
  readonly dir: string;
  readonly contextFile: string;
  readLog(): Promise<{ entries: LogEntry[] }>;
  readMemory(): Promise<{ global: string; channel: string }>;
}

export interface ChannelAgentOptions {
  qualifiedChannelId: string;
  workspaceDir: string;
  store: AgentChannelStore;
  resolved: ResolvedModel;
  thinkingLevel?: ThinkingLevel;
  /** Where pi may keep its own files; never the operator's ~/.pi. */
  agentDir: string;
  listChannels?: () => string[];
  retries?: number;
}

export interface RunTrigger {
  id: string;
  date: string;
  userName: string;
  text: string;
  attachments: LogEntry["attachments"];
}

export interface RunOutcome {
  stopReason: StopReason;
  errorMessage?: string;
  finalText: string;
  usage: Usage;
}

export const ZERO_USAGE: PiUsage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

function addUsage(a: PiUsage, b: PiUsage): PiUsage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    totalTokens: a.totalTokens + b.totalTokens,
    cost: {
      input: a.cost.input + b.cost.input,
      output: a.cost.output + b.cost.output,
      cacheRead: a.cost.cacheRead + b.cost.cacheRead,
      cacheWrite: a.cost.cacheWrite + b.cost.cacheWrite,
      total: a.cost.total + b.cost.total,
    },
  };
}

function usersFromLog(entries: LogEntry[]): PromptUser[] {
  const byId = new Map<string, PromptUser>();
  for (const e of entries) if (!e.isBot) byId.set(e.user, { id: e.user, username: e.userName, displayName: e.displayName });
  return [...byId.values()];
}

/** One pi AgentSession for one channel, persisted in the channel's context.jsonl. */
export class ChannelAgent {
  private running = false;

  private constructor(
    private readonly opts: ChannelAgentOptions,
    private readonly session: AgentSession,
    private readonly sessionManager: SessionManager,
    private readonly loader: MomResourceLoader,
  ) {}

  static async create(opts: ChannelAgentOptions): Promise<ChannelAgent> {
    mkdirSync(opts.store.dir, { recursive: true });
    const sessionManager = SessionManager.open(opts.store.contextFile, opts.store.dir, opts.store.dir);
    const loader = new MomResourceLoader();
    const settingsManager = SettingsManager.inMemory({
      compaction: { enabled: true },
      retry: { enabled: true, maxRetries: opts.retries ?? 3 },
    });
    const { session } = await createAgentSession({
      cwd: opts.store.dir,
      agentDir: opts.agentDir,
      model: opts.resolved.model,
      thinkingLevel: opts.thinkingLevel ?? "off",
      authStorage: opts.resolved.authStorage,
      modelRegistry: opts.resolved.modelRegistry,
      resourceLoader: loader,
      sessionManager,
      settingsManager,
      tools: MOM_TOOL_NAMES,
      customTools: createMomTools(opts.store.dir),
    });
    return new ChannelAgent(opts, session, sessionManager, loader);
  }

  get isRunning(): boolean {
    return this.running;
  }

  get modelName(): string {
    const m = this.session.model;
    return m ? `${m.provider}/${m.id}` : "unknown";
  }

  /**
   * Runs the agent for one triggering message. Every session event is mapped and handed to
   * `emit` in order. Never throws for model or tool failures: they end the run with
   * stopReason "error" and a message the adapter can show.
   */
  async run(trigger: RunTrigger, emit: (body: OutboundEventBody) => void): Promise<RunOutcome> {
    if (this.running) throw new Error("a run is already active in this channel");
    this.running = true;
    const mapper = new OutboundMapper();
    const unsubscribe = this.session.subscribe((event) => {
      const body = mapper.map(event);
      if (body) emit(body);
    });
    const firstNew = this.session.messages.length;
    let thrown: Error | undefined;
    try {
      const { entries } = await this.opts.store.readLog();
      syncLogToSession(this.sessionManager, entries, trigger.id);
      this.session.agent.state.messages = this.sessionManager.buildSessionContext().messages;
      this.loader.systemPrompt = buildSystemPrompt({
        qualifiedChannelId: this.opts.qualifiedChannelId,
        workspaceDir: this.opts.workspaceDir,
        channelDir: this.opts.store.dir,
        memory: await this.opts.store.readMemory(),
        users: usersFromLog(entries),
        channels: this.opts.listChannels?.() ?? [],
        now: new Date(),
        timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      });
      // pi rebuilds its base prompt from the loader only when the tool set is (re)applied.
      this.session.setActiveToolsByName(this.session.getActiveToolNames());
      await this.session.prompt(formatChatLine(trigger));
    } catch (err) {
      thrown = err as Error;
    } finally {
      unsubscribe();
      this.running = false;
    }
    return this.outcome(firstNew, thrown);
  }

  async abort(): Promise<void> {
    if (this.running) await this.session.abort();
  }

  dispose(): void {
    this.session.dispose();
  }

  private outcome(firstNew: number, thrown: Error | undefined): RunOutcome {
    const assistants = this.session.messages.slice(firstNew).filter((m): m is AssistantMessage => (m as { role: string }).role === "assistant");
    const usage = assistants.reduce((acc, m) => addUsage(acc, m.usage ?? ZERO_USAGE), ZERO_USAGE);
    const last = assistants.at(-1);
    const finalText = (last?.content ?? [])
      .filter((c): c is { type: "text"; text: string } => c.type === "text")
      .map((c) => c.text)
      .join("")
      .trim();
    const ctx = this.session.getContextUsage();
    const fullUsage: Usage = {
      ...usage,
      ...(ctx?.tokens != null && { contextTokens: ctx.tokens }),
      ...(ctx && { contextWindow: ctx.contextWindow }),
    };
    if (thrown) return { stopReason: "error", errorMessage: thrown.message, finalText, usage: fullUsage };
    if (!last) return { stopReason: "error", errorMessage: "the model produced no answer", finalText, usage: fullUsage };
    return {
      stopReason: last.stopReason,
      ...(last.errorMessage !== undefined && { errorMessage: last.errorMessage }),
      finalText,
      usage: fullUsage,
    };
  }
}
