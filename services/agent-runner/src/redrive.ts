import { ChannelAgent, resolveModel } from "@mom/agent";
import type { BusEntry } from "@mom/bus";
import { type ChannelMessage, type ChannelRef, type OutboundEvent, type OutboundEventBody, qualifiedChannelId, type Usage } from "@mom/contracts";
import { type LoadedConfig, loadAuthProfiles, parseModelRef } from "@mom/config";
import { Sandbox } from "@mom/sandbox";
import { WorkspaceLayout } from "@mom/store";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, relative, resolve } from "node:path";
import { toLogEntry } from "./channel-worker.js";
import { channelSandbox } from "./workspace-sandbox.js";

/** A redrive refused before any model call (bad model, scratch dir in the data dir, too many messages); the message says what to change. */
export class RedriveRefused extends Error {
  constructor(
    /** The option at fault: "model", "workspace" or "window". */
    readonly field: "model" | "workspace" | "window",
    message: string,
  ) {
    super(message);
  }
}

type RunEnd = Extract<OutboundEventBody, { type: "run_ended" }>;

export interface RecordedAnswer {
  runId: string;
  model?: string;
  /** Missing when the run had not ended in the window. */
  end?: RunEnd;
}

/** One triggering message: what mom answered then, and what the fresh agent answers now. */
export interface RedriveResult {
  messageId: string;
  time: string;
  from: string;
  text: string;
  /** null: no run for this message in the window. */
  recorded: RecordedAnswer | null;
  redrive: { model: string; stopReason: string; errorMessage?: string; finalText: string; steps: string[]; usage: Usage; durationMs: number };
}

export interface RedriveOptions {
  loaded: LoadedConfig;
  ref: ChannelRef;
  /** The channel window as readChannelWindow gives it. */
  entries: BusEntry[];
  /** provider/id; default: config.json's model. */
  model?: string;
  /** The scratch dir (made if missing, must be outside the data dir); default: a new temporary dir. */
  workspace?: string;
  /** More triggering messages than this is refused before any model call. */
  maxTriggers?: number;
  /** Aborts the run under way and skips the rest. */
  signal?: AbortSignal;
  /** Called once the agent is ready, before the first model call. */
  onStart?: (info: { root: string; model: string; messages: number; triggers: number }) => void;
  onResult?: (r: RedriveResult) => void;
}

/** The last run each triggering message got in the window (a resumed run replaces the cut-off one). */
export function recordedRuns(entries: BusEntry[]): Map<string, RecordedAnswer> {
  const byTrigger = new Map<string, RecordedAnswer>();
  const byRun = new Map<string, RecordedAnswer>();
  for (const e of entries) {
    if (e.kind !== "out" || !("data" in e)) continue;
    const o = e.data as OutboundEvent;
    if (o.event.type === "run_started") {
      const r: RecordedAnswer = { runId: o.runId, model: o.event.model };
      byRun.set(o.runId, r);
      byTrigger.set(o.event.trigger.messageId, r);
    } else if (o.event.type === "run_ended") {
      const r = byRun.get(o.runId);
      if (r) r.end = o.event;
    }
  }
  return byTrigger;
}

/** The inbound messages of a window, in order. */
export function inboundOf(entries: BusEntry[]): ChannelMessage[] {
  return entries.filter((e): e is BusEntry & { data: ChannelMessage } => e.kind === "in" && "data" in e).map((e) => e.data);
}

/** Makes the scratch dir; the live workspace (and anything else in the data dir) is never written by a redrive. */
export function scratchWorkspace(loaded: LoadedConfig, wanted: string | undefined): string {
  const dir = resolve(wanted ?? mkdtempSync(join(tmpdir(), "mom-redrive-")));
  const rel = relative(loaded.paths.dataDir, dir);
  if (!rel.startsWith("..") && !isAbsolute(rel)) throw new RedriveRefused("workspace", `${wanted}: inside the data dir ${loaded.paths.dataDir}; a redrive needs a scratch dir outside it`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Redrive: the window's inbound messages go, in order, to a fresh agent in a scratch workspace —
 * in this process, with no bus, so no live subject, consumer or workspace is touched — and each
 * triggering message's recorded answer is returned beside the new one. `mom replay --redrive` and
 * the web console both run this.
 */
export async function redriveWindow(o: RedriveOptions): Promise<RedriveResult[]> {
  const inbound = inboundOf(o.entries);
  const triggers = inbound.filter((m) => m.isMention).length;
  if (!triggers) return [];
  if (o.maxTriggers !== undefined && triggers > o.maxTriggers) {
    throw new RedriveRefused("window", `the window holds ${triggers} messages that asked mom something; a redrive takes at most ${o.maxTriggers}: pick a shorter window`);
  }
  const modelRef = o.model || o.loaded.config.model;
  let parsed: ReturnType<typeof parseModelRef>;
  try {
    parsed = parseModelRef(modelRef);
  } catch (err) {
    throw new RedriveRefused("model", (err as Error).message);
  }
  const profiles = loadAuthProfiles(o.loaded.paths.authProfilesFile).profiles;
  let resolved: ReturnType<typeof resolveModel>;
  try {
    resolved = resolveModel(parsed.provider, parsed.modelId, o.loaded.paths, (p) => profiles.some((x) => x.provider === p));
  } catch (err) {
    throw new RedriveRefused("model", (err as Error).message);
  }
  const root = scratchWorkspace(o.loaded, o.workspace);
  const layout = new WorkspaceLayout(join(root, "workspace"));
  await layout.ensureWorkspace();
  const store = layout.channel(o.ref);
  const sandbox = new Sandbox(o.loaded.config.sandbox, { dataDir: root, workspaceDir: layout.workspaceDir });
  const agent = await ChannelAgent.create({
    qualifiedChannelId: qualifiedChannelId(o.ref),
    workspaceDir: layout.workspaceDir,
    store,
    sandbox: channelSandbox(sandbox, store),
    resolved,
    agentDir: join(root, ".pi"),
  });
  const onAbort = () => void agent.abort().catch(() => {});
  o.signal?.addEventListener("abort", onAbort);
  try {
    const recorded = recordedRuns(o.entries);
    o.onStart?.({ root, model: modelRef, messages: inbound.length, triggers });
    const results: RedriveResult[] = [];
    for (const m of inbound) {
      if (o.signal?.aborted) break;
      await store.appendLog(toLogEntry(m));
      if (!m.isMention) continue;
      const steps: string[] = [];
      const started = Date.now();
      const outcome = await agent.run({ id: m.id, date: m.timestamp, userName: m.sender.username, text: m.text, attachments: m.attachments }, (ev) => {
        if (ev.type === "tool_execution_end") steps.push(`${ev.isError ? "✗" : "✓"} ${ev.label}`);
      });
      if (outcome.finalText) await store.appendLog({ id: `redrive-${m.id}:reply`, date: new Date().toISOString(), user: "mom", userName: "mom", text: outcome.finalText, attachments: [], isBot: true });
      const r: RedriveResult = {
        messageId: m.id,
        time: m.timestamp,
        from: m.sender.username,
        text: m.text,
        recorded: recorded.get(m.id) ?? null,
        redrive: { model: modelRef, stopReason: outcome.stopReason, errorMessage: outcome.errorMessage, finalText: outcome.finalText, steps, usage: outcome.usage, durationMs: Date.now() - started },
      };
      results.push(r);
      o.onResult?.(r);
    }
    return results;
  } finally {
    o.signal?.removeEventListener("abort", onAbort);
    agent.dispose();
  }
}
