import { ChannelAgent, resolveModel } from "@mom/agent";
import { channelSandbox, toLogEntry } from "@mom/agent-runner";
import { type ChannelMessage, type ChannelRef, type OutboundEvent, type OutboundEventBody, qualifiedChannelId } from "@mom/contracts";
import { type LoadedConfig, loadAuthProfiles, parseModelRef } from "@mom/config";
import { Sandbox } from "@mom/sandbox";
import { WorkspaceLayout } from "@mom/store";
import { formatUsage } from "@mom/format";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, relative, resolve } from "node:path";
import type { BusEntry } from "./bus-view.js";
import { CommandError } from "./command-error.js";

export interface RedriveOptions {
  model?: string;
  workspace?: string;
  json?: boolean;
}

type RunEnd = Extract<OutboundEventBody, { type: "run_ended" }>;

interface Recorded {
  runId: string;
  model?: string;
  end?: RunEnd;
}

/** The last run each triggering message got in the window (a resumed run replaces the cut-off one). */
function recordedRuns(entries: BusEntry[]): Map<string, Recorded> {
  const byTrigger = new Map<string, Recorded>();
  const byRun = new Map<string, Recorded>();
  for (const e of entries) {
    if (e.kind !== "out" || !("data" in e)) continue;
    const o = e.data as OutboundEvent;
    if (o.event.type === "run_started") {
      const r: Recorded = { runId: o.runId, model: o.event.model };
      byRun.set(o.runId, r);
      byTrigger.set(o.event.trigger.messageId, r);
    } else if (o.event.type === "run_ended") {
      const r = byRun.get(o.runId);
      if (r) r.end = o.event;
    }
  }
  return byTrigger;
}

function scratchWorkspace(loaded: LoadedConfig, wanted: string | undefined): string {
  const dir = resolve(wanted ?? mkdtempSync(join(tmpdir(), "mom-redrive-")));
  const rel = relative(loaded.paths.dataDir, dir);
  // The live workspace (and anything else in the data dir) is never written by a redrive.
  if (!rel.startsWith("..") && !isAbsolute(rel)) throw new CommandError(`--workspace ${wanted}: inside the data dir ${loaded.paths.dataDir}; a redrive needs a scratch dir outside it`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * `mom replay … --redrive`: the window's inbound messages go, in order, to a fresh agent in a
 * scratch workspace — in this process, with no bus, so no live subject, consumer or workspace is
 * touched — and each triggering message's recorded answer is printed beside the new one.
 */
export async function redrive(loaded: LoadedConfig, ref: ChannelRef, entries: BusEntry[], o: RedriveOptions, print: (line: string) => void): Promise<number> {
  const inbound = entries.filter((e): e is BusEntry & { data: ChannelMessage } => e.kind === "in" && "data" in e).map((e) => e.data);
  if (!inbound.some((m) => m.isMention)) {
    print(o.json ? JSON.stringify({ kind: "redrive", triggers: 0 }) : `nothing to redrive: no message in this window of ${qualifiedChannelId(ref)} asked mom for anything`);
    return 0;
  }
  const modelRef = o.model ?? loaded.config.model;
  let parsed: ReturnType<typeof parseModelRef>;
  try {
    parsed = parseModelRef(modelRef);
  } catch (err) {
    throw new CommandError(`--model: ${(err as Error).message}`);
  }
  const profiles = loadAuthProfiles(loaded.paths.authProfilesFile).profiles;
  const resolved = resolveModel(parsed.provider, parsed.modelId, loaded.paths, (p) => profiles.some((x) => x.provider === p));
  const root = scratchWorkspace(loaded, o.workspace);
  const layout = new WorkspaceLayout(join(root, "workspace"));
  await layout.ensureWorkspace();
  const store = layout.channel(ref);
  const sandbox = new Sandbox(loaded.config.sandbox, { dataDir: root, workspaceDir: layout.workspaceDir });
  const agent = await ChannelAgent.create({
    qualifiedChannelId: qualifiedChannelId(ref),
    workspaceDir: layout.workspaceDir,
    store,
    sandbox: channelSandbox(sandbox, store),
    resolved,
    agentDir: join(root, ".pi"),
  });
  const recorded = recordedRuns(entries);
  if (!o.json) print(`redrive of ${qualifiedChannelId(ref)}: ${inbound.length} messages to a fresh agent (model ${modelRef}) in ${root}`);
  let failed = 0;
  for (const m of inbound) {
    await store.appendLog(toLogEntry(m));
    if (!m.isMention) continue;
    const steps: string[] = [];
    const started = Date.now();
    const outcome = await agent.run({ id: m.id, date: m.timestamp, userName: m.sender.username, text: m.text, attachments: m.attachments }, (ev) => {
      if (ev.type === "tool_execution_end") steps.push(`${ev.isError ? "✗" : "✓"} ${ev.label}`);
    });
    if (outcome.finalText) await store.appendLog({ id: `redrive-${m.id}:reply`, date: new Date().toISOString(), user: "mom", userName: "mom", text: outcome.finalText, attachments: [], isBot: true });
    if (outcome.stopReason === "error") failed++;
    const was = recorded.get(m.id);
    if (o.json) {
      print(JSON.stringify({
        kind: "redrive",
        messageId: m.id,
        from: m.sender.username,
        text: m.text,
        recorded: was ? { runId: was.runId, model: was.model, stopReason: was.end?.stopReason, finalText: was.end?.finalText, usage: was.end?.usage } : null,
        redrive: { model: modelRef, stopReason: outcome.stopReason, errorMessage: outcome.errorMessage, finalText: outcome.finalText, steps, usage: outcome.usage },
      }));
      continue;
    }
    print("");
    print(`── ${m.timestamp.slice(0, 19).replace("T", " ")} ${m.sender.username}: ${m.text}`);
    if (!was) print("   recorded: (no run for this message in the window)");
    else if (!was.end) print(`   recorded (run ${was.runId.slice(0, 8)}, ${was.model}): (the run had not ended)`);
    else print(`   recorded (run ${was.runId.slice(0, 8)}, ${was.model}, ${was.end.stopReason}): ${block(was.end.errorMessage ?? was.end.finalText)}\n   ${" ".repeat(9)}${formatUsage(was.end.usage, was.end.durationMs)}`);
    print(`   redrive  (${modelRef}, ${outcome.stopReason}): ${block(outcome.errorMessage ?? outcome.finalText)}`);
    for (const s of steps) print(`   ${" ".repeat(9)}${s}`);
    print(`   ${" ".repeat(9)}${formatUsage(outcome.usage, Date.now() - started)}`);
  }
  return failed ? 1 : 0;
}

const block = (text: string) => (text.trim() || "(no text)").replace(/\n/g, "\n            ");
