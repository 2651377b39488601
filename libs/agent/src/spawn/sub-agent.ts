import type { ThinkingLevel } from "@mariozechner/pi-agent-core";
import type { AssistantMessage, Usage as PiUsage } from "@mariozechner/pi-ai";
import { createAgentSession, SessionManager, SettingsManager, type ToolDefinition } from "@mariozechner/pi-coding-agent";
import type { ChannelSandbox } from "@mom/sandbox";
import type { ToolGate } from "@mom/tools";
import { withNote } from "../gated-tools.js";
import { fallbackLabel } from "../labelled-tools.js";
import { guardedStreamFn, type ModelAccess, sessionModel } from "../model-access.js";
import type { ResolvedModel } from "../model.js";
import { MomResourceLoader } from "../resource-loader.js";
import { addUsage, ZERO_USAGE } from "../usage.js";
import { buildSubAgentPrompt } from "./sub-agent-prompt.js";
import { TokenBudget } from "./token-budget.js";

type AnyTool = ToolDefinition<any, any, any>;

/** What a sub-agent shares with the channel's agent that starts it. */
export interface SubAgentEnv {
  qualifiedChannelId: string;
  /** The channel's directory: the child's working directory. */
  channelDir: string;
  sandbox: ChannelSandbox;
  resolved: ResolvedModel;
  thinkingLevel?: ThinkingLevel;
  agentDir: string;
  retries?: number;
  /** The channel's spend limits and credentials; the child's calls go through them as the parent run's. */
  modelAccess?: ModelAccess;
  /** The child's tool calls' sections of the system prompt (web, custom tools, code mode), by its tool names. */
  extraPrompt?: (tools: string[]) => string;
  /** The receipts of the child's own calls so far, as text for its model (like the parent's note). */
  receiptsNote?: (spawnCallId: string) => string | undefined;
  /** The child called a tool it does not have: recorded as denied (pi answers it "not found"). */
  onHiddenTool?: (toolCallId: string, toolId: string, spawnCallId: string) => Promise<void>;
}

export interface SubAgentTask {
  /** The spawn call that starts it: every receipt of the child's calls names it as parent. */
  spawnCallId: string;
  task: string;
  /** Its tools, already narrowed and gated for it (see nestedGate). */
  tools: AnyTool[];
  tokens: number;
  seconds: number;
  /** The spawn call's signal: the parent run stopped or the call timed out. */
  signal: AbortSignal;
  /** A line for the chat's progress display (the child's current tool call). */
  onProgress?: (line: string) => void;
}

export interface SubAgentCall {
  toolName: string;
  ok: boolean;
}

export interface SubAgentResult {
  /** done: it answered; tokens / time: its budget ran out; stopped: the parent run was stopped; failed: anything else. */
  end: "done" | "tokens" | "time" | "stopped" | "failed";
  /** Its answer when done; otherwise what it had written so far. */
  text: string;
  /** Why it did not finish. */
  reason?: string;
  usage: PiUsage;
  /** Tokens its finished model calls used, as its budget counts them. */
  tokensUsed: number;
  calls: SubAgentCall[];
  ms: number;
}

/**
 * The gate of a child's calls: the parent's own gate (policy, approvals in the parent run, receipts
 * with the parent's runId), each call marked with the spawn call it came from. Ids are prefixed with
 * the spawn call's, so a child's call never shares an id with the parent's.
 */
export function nestedGate(gate: ToolGate, spawnCallId: string): ToolGate {
  return {
    run: (call, signal, fn) =>
      gate.run(
        { ...call, toolCallId: `${spawnCallId}.${call.toolCallId}`, parentToolCallId: call.parentToolCallId ? `${spawnCallId}.${call.parentToolCallId}` : spawnCallId },
        signal,
        fn,
      ),
  };
}

const textOf = (m: AssistantMessage) =>
  m.content
    .filter((c): c is { type: "text"; text: string } => c.type === "text")
    .map((c) => c.text)
    .join("")
    .trim();

/**
 * One sub-agent: a pi AgentSession of its own, in memory (never the channel's context.jsonl),
 * prompted with the task, with its tools and system prompt, its model calls admitted against its
 * token budget and then the channel's spend limits, and aborted when its time is up or the parent's
 * signal fires. Never throws: every way it can end is a result.
 */
export async function runSubAgent(env: SubAgentEnv, t: SubAgentTask): Promise<SubAgentResult> {
  const started = Date.now();
  const names = t.tools.map((tool) => tool.name);
  const budget = new TokenBudget(t.tokens);
  const loader = new MomResourceLoader();
  loader.systemPrompt = buildSubAgentPrompt({
    qualifiedChannelId: env.qualifiedChannelId,
    channelDir: env.channelDir,
    sandbox: env.sandbox.description,
    tools: names,
    tokens: t.tokens,
    seconds: t.seconds,
    extra: env.extraPrompt?.(names) || undefined,
  });
  const { session } = await createAgentSession({
    cwd: env.channelDir,
    agentDir: env.agentDir,
    ...sessionModel(env),
    resourceLoader: loader,
    sessionManager: SessionManager.inMemory(env.channelDir),
    // No compaction: its budget ends it long before its context could need one.
    settingsManager: SettingsManager.inMemory({ compaction: { enabled: false }, retry: { enabled: true, maxRetries: env.retries ?? 3 } }),
    tools: names,
    customTools: t.tools,
  });
  let stoppedBecause: string | undefined;
  session.agent.streamFn = guardedStreamFn(session.agent.streamFn, budget.access(env.modelAccess), env.resolved.modelRegistry, (why) => (stoppedBecause = why));
  const base = session.agent.transformContext;
  session.agent.transformContext = async (messages, signal) => withNote(base ? await base(messages, signal) : messages, env.receiptsNote?.(t.spawnCallId));
  session.setActiveToolsByName(names);

  const answers: AssistantMessage[] = [];
  const calls: SubAgentCall[] = [];
  const unsubscribe = session.subscribe((event) => {
    if (event.type === "message_end" && event.message.role === "assistant") answers.push(event.message);
    if (event.type === "tool_execution_start") t.onProgress?.(`sub-agent → ${fallbackLabel(event.toolName, event.args)}`);
    if (event.type === "tool_execution_end") {
      calls.push({ toolName: event.toolName, ok: !event.isError });
      if (event.isError && !names.includes(event.toolName)) void env.onHiddenTool?.(`${t.spawnCallId}.${event.toolCallId}`, event.toolName, t.spawnCallId);
    }
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void session.abort();
  }, t.seconds * 1000);
  const onAbort = () => void session.abort();
  t.signal.addEventListener("abort", onAbort, { once: true });
  let thrown: Error | undefined;
  try {
    if (!t.signal.aborted) await session.prompt(t.task);
  } catch (err) {
    thrown = err as Error;
  } finally {
    clearTimeout(timer);
    t.signal.removeEventListener("abort", onAbort);
    unsubscribe();
    session.dispose();
  }

  const last = answers.at(-1);
  const result = (end: SubAgentResult["end"], text: string, reason?: string): SubAgentResult => ({
    end,
    text,
    ...(reason !== undefined && { reason }),
    usage: answers.reduce((u, m) => addUsage(u, m.usage ?? ZERO_USAGE), ZERO_USAGE),
    tokensUsed: budget.used,
    calls,
    ms: Date.now() - started,
  });
  const soFar = answers.map(textOf).filter(Boolean).join("\n\n");
  if (t.signal.aborted) return result("stopped", soFar, "the run was stopped");
  if (timedOut) return result("time", soFar, `ran out of its time budget of ${t.seconds} s`);
  if (budget.exceeded) return result("tokens", soFar, budget.exceeded);
  if (stoppedBecause) return result("failed", soFar, stoppedBecause);
  if (thrown) return result("failed", soFar, thrown.message);
  if (!last) return result("failed", soFar, "its model produced no answer");
  if (last.stopReason === "error" || last.stopReason === "aborted") return result("failed", soFar, last.errorMessage ?? last.stopReason);
  return result("done", textOf(last));
}
