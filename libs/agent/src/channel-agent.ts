import type { ThinkingLevel } from "@mariozechner/pi-agent-core";
import type { AssistantMessage, ImageContent, Usage as PiUsage } from "@mariozechner/pi-ai";
import { type AgentSession, createAgentSession, SessionManager, SettingsManager, type ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { LogEntry, OutboundEventBody, StopReason, Usage } from "@mom/contracts";
import { type LogSender, senderOf } from "@mom/store";
import type { ChannelSandbox } from "@mom/sandbox";
import type { FileHandle } from "node:fs/promises";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { type AttachOptions, createAttachTool } from "./attach-tool.js";
import { createMomTools, MOM_TOOL_NAMES, withLabel } from "./labelled-tools.js";
import { formatChatLine, HISTORY_READ_BYTES, lastSyncCursor, LOG_SYNC_ENTRY, type PlacedLogEntry, type SyncCursor, syncLogToSession, wasPrompted } from "./log-sync.js";
import type { ResolvedModel } from "./model.js";
import { describeEndpointProblem, diagnoseModelError } from "./model-endpoint.js";
import { OutboundMapper } from "./outbound-mapper.js";
import { gated, withNote } from "./gated-tools.js";
import type { ToolGate } from "@mom/tools";
import { guardedCompaction, guardedStreamFn, type ModelAccess, sessionModel } from "./model-access.js";
import { loadMomSkills } from "./skills.js";
import { boundedSkills, readMemoryFile } from "./prompt-files.js";
import { fenceSessionWrites, linearGetBranch } from "./session-path.js";
import { MomResourceLoader } from "./resource-loader.js";
import { buildSystemPrompt, type PromptUser } from "./system-prompt.js";
import { loadTriggerImages } from "./trigger-images.js";
import { createSpawnTool, SPAWN_TOOL_NAME, spawnPrompt } from "./spawn/spawn-tool.js";
import type { SubAgentEnv } from "./spawn/sub-agent.js";
import { addUsage, ZERO_USAGE } from "./usage.js";
import type { SpawnConfig } from "@mom/config";

/** What the agent needs of a channel's storage (implemented by @mom/store's ChannelStore). */
export interface AgentChannelStore {
  readonly dir: string;
  /** Throws when this process may no longer write the channel's files; checked before each write to context.jsonl. */
  readonly writeGuard?: () => void;
  readonly contextFile: string;
  /**
   * context.jsonl opened beneath the channel's directory, never through a symlink, FIFO or hard
   * link (ChannelStore.openContext): pi reads and writes the session through this descriptor.
   */
  openContext(): Promise<FileHandle>;
  readonly scratchDir: string;
  readonly skillsDir: string;
  /**
   * Log entries after a sync cursor (all of them without one), each with its end offset; of at
   * most the log's last `maxBytes`, with the bytes after the cursor left unread.
   */
  readLogSince(cursor: SyncCursor | undefined, maxBytes: number): Promise<{ entries: PlacedLogEntry[]; skippedBytes: number }>;
  /** Who has been talking lately (the log's last MiB), mom aside. */
  recentSenders(): Promise<LogSender[]>;
}

export interface ChannelAgentOptions {
  qualifiedChannelId: string;
  workspaceDir: string;
  store: AgentChannelStore;
  /** Where the channel's tools run and which files they reach (@mom/sandbox). */
  sandbox: ChannelSandbox;
  resolved: ResolvedModel;
  thinkingLevel?: ThinkingLevel;
  /** Where pi may keep its own files; never the operator's ~/.pi. */
  agentDir: string;
  /**
   * The workspace's channels for the prompt (qualified ids), when the operator opted in
   * (`runner.listChannels`); without it the prompt names no other channel.
   */
  listChannels?: () => Promise<string[]>;
  retries?: number;
  /** More tools (e.g. invoke_tool for custom host tools), already labelled and gated. */
  extraTools?: ToolDefinition<any, any, any>[];
  /** Extra system prompt text, rebuilt before every run (e.g. the custom tools list). */
  extraPrompt?: () => string;
  /** The tools the model may see this run (policy hides the others); default all. */
  activeTools?: () => string[];
  /** Every tool call goes through it (policy, approvals, receipts, timeout). */
  gate?: ToolGate;
  /** The current run's tool receipts as text, added to what the model reads before each call. */
  receiptsNote?: () => string | undefined;
  /** Told about workspace files the prompt could not use whole (bad SKILL.md, a MEMORY.md that is a directory or too big), once per run. */
  onFileProblems?: (problems: string[]) => void;
  /** Lets the attach tool send files into the current run (see attach-tool.ts); without it attach reports an error. */
  attach?: AttachOptions;
  /** Spend limits and credentials around every model call (model-access.ts). */
  modelAccess?: ModelAccess;
  /** Sub-agents (`spawn`, spawn/spawn-tool.ts); without it the channel has no spawn tool. */
  spawn?: SpawnOptions;
}

export interface SpawnOptions extends Pick<SubAgentEnv, "extraPrompt" | "receiptsNote" | "onHiddenTool"> {
  limits: SpawnConfig;
  /** The extraTools again, built around the given gate (a child's: its calls carry the spawn call's id). */
  extraTools?: (gate: ToolGate | undefined) => ToolDefinition<any, any, any>[];
}

export interface RunTrigger {
  id: string;
  date: string;
  userName: string;
  text: string;
  attachments: LogEntry["attachments"];
  /** Images shown to the model with the message; default: the image attachments' materialised files. */
  images?: ImageContent[];
}

export interface RunOutcome {
  stopReason: StopReason;
  errorMessage?: string;
  finalText: string;
  usage: Usage;
  /** Steered messages the run ended before delivering (formatted lines); answer them in a new run. */
  undelivered?: string[];
}

export { ZERO_USAGE };

/** One pi AgentSession for one channel, persisted in the channel's context.jsonl. */
export class ChannelAgent {
  private running = false;
  /** abort() came while the run was still being prepared: pi had nothing to abort yet. */
  private abortRequested = false;
  /** The channel's people, from the log's tail once, then from each run's new lines. */
  private people?: Map<string, PromptUser>;
  /** Why mom itself ended the current run before a model call (spend limit, no usable credential). */
  private stoppedBecause?: string;
  /** The current run's sub-agents: how many it started and what their model calls used. */
  private spawned = { count: 0, usage: ZERO_USAGE };

  private constructor(
    private readonly opts: ChannelAgentOptions,
    private readonly session: AgentSession,
    private readonly sessionManager: SessionManager,
    private readonly loader: MomResourceLoader,
    private readonly context: FileHandle,
  ) {}

  static async create(opts: ChannelAgentOptions): Promise<ChannelAgent> {
    await mkdir(opts.store.dir, { recursive: true });
    // pi reads and writes the session file synchronously, by name. It is handed the descriptor's
    // /proc/self/fd path instead: every open pi makes lands on the very file mom opened and checked
    // (a regular file of one link beneath the channel's directory), whatever the channel's commands
    // do to the name meanwhile — no symlink to follow, no FIFO to block on.
    const context = await opts.store.openContext();
    const empty = (await context.stat()).size === 0;
    // SessionManager.open reads and parses the whole file for its header's cwd, then again to load
    // it; the cwd is ours, so one read does (a 10,000-entry context.jsonl: ~90 ms less per cold start).
    const sessionManager = SessionManager.create(opts.store.dir, opts.store.dir);
    sessionManager.setSessionFile(`/proc/self/fd/${context.fd}`);
    // pi starts a new session in an empty file by writing its header, then writes the header again
    // with the first answer; emptied again, the file gets it once. No tool runs before that answer.
    if (empty) await context.truncate(0);
    linearGetBranch(sessionManager);
    fenceSessionWrites(sessionManager, () => opts.store.writeGuard?.());
    const loader = new MomResourceLoader();
    // The spawn tool counts per run on the agent, which exists only once the session does.
    let self: ChannelAgent | undefined;
    const spawnTool = opts.spawn && channelSpawnTool(opts, opts.spawn, {
      admit: (maxPerRun) => (self ? self.admitSpawn(maxPerRun) : "the channel's agent is not ready"),
      add: (usage) => self?.addSpawnedUsage(usage),
    });
    const settingsManager = SettingsManager.inMemory({
      compaction: { enabled: true },
      retry: { enabled: true, maxRetries: opts.retries ?? 3 },
    });
    const { session } = await createAgentSession({
      cwd: opts.store.dir,
      agentDir: opts.agentDir,
      ...sessionModel(opts),
      resourceLoader: loader,
      sessionManager,
      settingsManager,
      tools: [...MOM_TOOL_NAMES, ...(opts.extraTools ?? []).map((t) => t.name), ...(spawnTool ? [SPAWN_TOOL_NAME] : [])],
      customTools: [
        ...createMomTools(opts.sandbox, opts.store.scratchDir, opts.gate),
        ...(opts.extraTools ?? []),
        ...(spawnTool ? [spawnTool] : []),
        withLabel(gatedIf(createAttachTool({ sandbox: opts.sandbox, workspaceDir: opts.workspaceDir, attach: opts.attach }) as Parameters<typeof withLabel>[0], opts.gate)),
      ],
    });
    // Before every model call, the run's receipts so far ride along on the last message, so the
    // final answer is written knowing what really happened.
    const base = session.agent.transformContext;
    session.agent.transformContext = async (messages, signal) => withNote(base ? await base(messages, signal) : messages, opts.receiptsNote?.());
    const agent = new ChannelAgent(opts, session, sessionManager, loader, context);
    self = agent;
    // A stop that lands after run() last looked for one but before pi's own run has begun (the
    // trigger's images being read, a compaction pi makes before sending the prompt) had nothing to
    // abort: pi's run is aborted as it starts, before its first model call (its listeners are awaited).
    session.agent.subscribe((event) => {
      if (event.type === "agent_start" && agent.abortRequested) session.agent.abort();
    });
    if (opts.modelAccess) {
      session.agent.streamFn = guardedStreamFn(session.agent.streamFn, opts.modelAccess, opts.resolved.modelRegistry, (why) => (agent.stoppedBecause = why));
      loader.compactWith = guardedCompaction(session.agent.streamFn, opts.resolved.modelRegistry);
    }
    return agent;
  }

  /**
   * A fresh session (`/new`) starts after the log entry `cursor` names: the log's earlier lines
   * are not synced into it. No-op for a session that already has a sync marker.
   */
  startAfter(cursor: SyncCursor): void {
    if (!lastSyncCursor(this.sessionManager)) this.sessionManager.appendCustomEntry(LOG_SYNC_ENTRY, { lastId: cursor.lastId, ...(cursor.offset !== undefined && { offset: cursor.offset }) });
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
  async run(trigger: RunTrigger, emit: (body: OutboundEventBody) => void, resume?: { note: string }): Promise<RunOutcome> {
    if (this.running) throw new Error("a run is already active in this channel");
    this.running = true;
    this.abortRequested = false;
    this.stoppedBecause = undefined;
    this.spawned = { count: 0, usage: ZERO_USAGE };
    const mapper = new OutboundMapper();
    // pi compacts after the prompt has resolved; the run (and its events) lasts until that is done.
    let compactionDone: Promise<void> = Promise.resolve();
    let endCompaction = () => {};
    // The run's answers as pi reports them, not a slice of session.messages: compaction replaces
    // that array with a shorter one, and an index taken before the run then points past its end.
    const answers: AssistantMessage[] = [];
    const unsubscribe = this.session.subscribe((event) => {
      if (event.type === "compaction_start") compactionDone = new Promise((r) => (endCompaction = r));
      if (event.type === "message_end" && event.message.role === "assistant") answers.push(event.message);
      const body = mapper.map(event);
      if (body) emit(body);
      if (event.type === "compaction_end") endCompaction();
    });
    let thrown: Error | undefined;
    try {
      // A resumed message whose first attempt reached the session is not said twice: only the note is.
      const alreadyPrompted = resume !== undefined && wasPrompted(this.sessionManager, trigger.id);
      if (!alreadyPrompted) {
        const { entries, skippedBytes } = await this.opts.store.readLogSince(lastSyncCursor(this.sessionManager), HISTORY_READ_BYTES);
        const added = syncLogToSession(this.sessionManager, entries, trigger.id, { skippedBytes });
        // The same messages go to the live context: rebuilding it from the session would walk the
        // channel's whole history on every run.
        if (added.length) this.session.agent.state.messages = [...this.session.agent.state.messages, ...added];
        for (const { entry } of entries) this.notePerson(senderOf(entry));
      }
      const loaded = await loadMomSkills(this.opts.workspaceDir, this.opts.store.dir);
      const { skills, problems } = boundedSkills(loaded.skills);
      problems.unshift(...loaded.problems);
      const memory = await this.readMemory(problems);
      if (problems.length) this.opts.onFileProblems?.(problems);
      const active = this.opts.activeTools?.() ?? MOM_TOOL_NAMES;
      this.loader.skills = skills;
      this.loader.systemPrompt = buildSystemPrompt({
        qualifiedChannelId: this.opts.qualifiedChannelId,
        workspaceDir: this.opts.workspaceDir,
        channelDir: this.opts.store.dir,
        memory,
        sandbox: this.opts.sandbox.description,
        users: await this.users(),
        ...(this.opts.listChannels && { channels: await this.opts.listChannels() }),
        sharedWritable: this.opts.sandbox.sharedWritable,
        now: new Date(),
        timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        extra:
          [this.opts.extraPrompt?.(), this.opts.spawn && active.includes(SPAWN_TOOL_NAME) ? spawnPrompt(this.opts.spawn.limits) : undefined, skippedNote(problems)]
            .filter(Boolean)
            .join("\n\n") || undefined,
      });
      // pi rebuilds its base prompt from the loader only when the tool set is (re)applied.
      this.session.setActiveToolsByName(active);
      if (this.abortRequested) return this.stoppedBeforePrompt(unsubscribe);
      if (alreadyPrompted) await this.session.prompt(resume.note);
      else await this.session.prompt(resume ? `${formatChatLine(trigger)}\n\n${resume.note}` : formatChatLine(trigger), { images: await this.imagesOf(trigger) });
      await compactionDone;
    } catch (err) {
      thrown = err as Error;
    } finally {
      this.running = false;
    }
    // A steer that arrived after pi's last check would otherwise wait for the next prompt.
    const undelivered = this.session.pendingMessageCount > 0 ? [...this.session.clearQueue().steering] : [];
    unsubscribe();
    const outcome = await this.withEndpoint(this.outcome(answers, thrown), answers.at(-1));
    return undelivered.length ? { ...outcome, undelivered } : outcome;
  }

  /**
   * Injects a message into the running run: pi delivers it after the current turn's tool calls.
   * False when no run is active (the caller should start a run instead).
   */
  async steer(trigger: RunTrigger): Promise<boolean> {
    if (!this.running) return false;
    await this.session.steer(formatChatLine(trigger), await this.imagesOf(trigger));
    return true;
  }

  // Never through a symlink: a MEMORY.md the agent turned into a symlink to another channel's
  // memory must not put that memory into this channel's prompt.
  private async readMemory(problems: string[]): Promise<{ global: string; channel: string }> {
    const read = async (root: string) => {
      const { text, problem } = await readMemoryFile(root);
      if (problem) problems.push(problem);
      return text;
    };
    return { global: await read(this.opts.workspaceDir), channel: await read(this.opts.store.dir) };
  }

  private async imagesOf(trigger: RunTrigger): Promise<ImageContent[] | undefined> {
    const images = trigger.images ?? (await loadTriggerImages(trigger.attachments, this.opts.workspaceDir, this.opts.store.dir));
    return images.length ? images : undefined;
  }

  private async users(): Promise<PromptUser[]> {
    if (!this.people) {
      this.people = new Map();
      for (const s of await this.opts.store.recentSenders()) this.notePerson(s);
    }
    return [...this.people.values()];
  }

  private notePerson(s: LogSender | undefined): void {
    if (s) this.people?.set(s.user, { id: s.user, username: s.userName, displayName: s.displayName });
  }

  /** Undefined when the current run may start one more sub-agent (and counts it), else why not. */
  private admitSpawn(maxPerRun: number): string | undefined {
    if (this.spawned.count >= maxPerRun) return `this run has started its ${maxPerRun} sub-agents (spawn.maxPerRun); do the rest yourself`;
    this.spawned.count++;
    return undefined;
  }

  private addSpawnedUsage(usage: PiUsage): void {
    this.spawned.usage = addUsage(this.spawned.usage, usage);
  }

  async abort(): Promise<void> {
    if (!this.running) return;
    this.abortRequested = true;
    // A compaction (after the run's answer, or before its prompt) is a model call pi's abort leaves
    // running: the run would end only with it. Stopped, it is made again before the next prompt.
    this.session.abortCompaction();
    await this.session.abort();
  }

  private stoppedBeforePrompt(unsubscribe: () => void): RunOutcome {
    this.running = false;
    unsubscribe();
    return { stopReason: "aborted", finalText: "", usage: ZERO_USAGE };
  }

  dispose(): void {
    this.session.dispose();
    void this.context.close().catch(() => undefined);
  }

  /**
   * A model call that failed says which endpoint and what failed (refused, DNS, TLS, 401, 404
   * model…) and the fix, not only the SDK's "Connection error.": the chat shows this message.
   */
  private async withEndpoint(outcome: RunOutcome, last: AssistantMessage | undefined): Promise<RunOutcome> {
    if (outcome.stopReason !== "error" || !outcome.errorMessage || this.stoppedBecause || last?.errorMessage !== outcome.errorMessage) return outcome;
    const model = this.session.model;
    if (!model) return outcome;
    const problem = await diagnoseModelError(model, outcome.errorMessage, { ...(this.opts.resolved.modelsFile && { modelsFile: this.opts.resolved.modelsFile }) }).catch(() => undefined);
    if (!problem) return outcome;
    // The SDK's own words first (a status, the server's message), then where and what to do.
    const said = problem.status !== undefined ? `${problem.status}${problem.detail ? ` ${problem.detail}` : ""}` : `${outcome.errorMessage.trim().replace(/\.$/, "")}: ${problem.detail}`;
    return { ...outcome, errorMessage: `${said} — ${describeEndpointProblem(problem, { detail: false })}` };
  }

  private outcome(assistants: AssistantMessage[], thrown: Error | undefined): RunOutcome {
    // The sub-agents' model calls are the run's too.
    const usage = assistants.reduce((acc, m) => addUsage(acc, m.usage ?? ZERO_USAGE), this.spawned.usage);
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
    if (this.stoppedBecause) return { stopReason: "error", errorMessage: this.stoppedBecause, finalText, usage: fullUsage };
    if (!last) return { stopReason: "error", errorMessage: "the model produced no answer", finalText, usage: fullUsage };
    return {
      stopReason: last.stopReason,
      ...(last.errorMessage !== undefined && { errorMessage: last.errorMessage }),
      finalText,
      usage: fullUsage,
    };
  }
}

/** Most skipped files the prompt names (the runner's log has them all). */
const SKIPPED_NOTE_MAX = 10;

/** What the model is told about workspace files mom skipped, so it can fix them (or say why a skill is missing). */
function skippedNote(problems: string[]): string | undefined {
  if (!problems.length) return undefined;
  const shown = problems.slice(0, SKIPPED_NOTE_MAX).map((p) => `- ${p.length > 300 ? `${p.slice(0, 300)}…` : p}`);
  const more = problems.length > SKIPPED_NOTE_MAX ? `\n- … and ${problems.length - SKIPPED_NOTE_MAX} more` : "";
  return `## Workspace files mom skipped or cut\nmom reads skills and memory only as regular files inside their directories, never through a symlink, and within size limits:\n${shown.join("\n")}${more}`;
}

/** The channel's spawn tool: its sub-agents share the channel's model, sandbox, gate and model access. */
function channelSpawnTool(opts: ChannelAgentOptions, spawn: SpawnOptions, perRun: { admit(maxPerRun: number): string | undefined; add(usage: PiUsage): void }) {
  const env: SubAgentEnv = {
    qualifiedChannelId: opts.qualifiedChannelId,
    channelDir: opts.store.dir,
    sandbox: opts.sandbox,
    resolved: opts.resolved,
    agentDir: opts.agentDir,
    ...(opts.thinkingLevel && { thinkingLevel: opts.thinkingLevel }),
    ...(opts.retries !== undefined && { retries: opts.retries }),
    ...(opts.modelAccess && { modelAccess: opts.modelAccess }),
    ...(spawn.extraPrompt && { extraPrompt: spawn.extraPrompt }),
    ...(spawn.receiptsNote && { receiptsNote: spawn.receiptsNote }),
    ...(spawn.onHiddenTool && { onHiddenTool: spawn.onHiddenTool }),
  };
  const tool = createSpawnTool({
    env,
    limits: spawn.limits,
    scratchDir: opts.store.scratchDir,
    ...(opts.gate && { gate: opts.gate }),
    available: () => opts.activeTools?.() ?? MOM_TOOL_NAMES,
    ...(spawn.extraTools && { extraTools: spawn.extraTools }),
    admit: () => perRun.admit(spawn.limits.maxPerRun),
    onUsage: (usage) => perRun.add(usage),
  });
  return withLabel(tool as Parameters<typeof withLabel>[0]);
}

function gatedIf(tool: Parameters<typeof gated>[0], gate: ToolGate | undefined) {
  return gate ? gated(tool, gate) : tool;
}
