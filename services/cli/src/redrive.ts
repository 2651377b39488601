import { RedriveRefused, redriveWindow } from "@mom/agent-runner";
import { type ChannelRef, qualifiedChannelId } from "@mom/contracts";
import type { LoadedConfig } from "@mom/config";
import { formatUsage } from "@mom/format";
import type { BusEntry } from "./bus-view.js";
import { CommandError } from "./command-error.js";

export interface RedriveOptions {
  model?: string;
  workspace?: string;
  json?: boolean;
}

/**
 * `mom replay … --redrive`: prints what @mom/agent-runner's redriveWindow returns — each triggering
 * message's recorded answer beside the fresh agent's — as it comes.
 */
export async function redrive(loaded: LoadedConfig, ref: ChannelRef, entries: BusEntry[], o: RedriveOptions, print: (line: string) => void): Promise<number> {
  let failed = 0;
  let results;
  try {
    results = await redriveWindow({
      loaded,
      ref,
      entries,
      model: o.model,
      workspace: o.workspace,
      onStart: ({ root, model, messages }) => {
        if (!o.json) print(`redrive of ${qualifiedChannelId(ref)}: ${messages} messages to a fresh agent (model ${model}) in ${root}`);
      },
      onResult: (r) => {
        if (r.redrive.stopReason === "error") failed++;
        const was = r.recorded;
        if (o.json) {
          print(JSON.stringify({
            kind: "redrive",
            messageId: r.messageId,
            from: r.from,
            text: r.text,
            recorded: was ? { runId: was.runId, model: was.model, stopReason: was.end?.stopReason, finalText: was.end?.finalText, usage: was.end?.usage } : null,
            redrive: { model: r.redrive.model, stopReason: r.redrive.stopReason, errorMessage: r.redrive.errorMessage, finalText: r.redrive.finalText, steps: r.redrive.steps, usage: r.redrive.usage },
          }));
          return;
        }
        print("");
        print(`── ${r.time.slice(0, 19).replace("T", " ")} ${r.from}: ${r.text}`);
        if (!was) print("   recorded: (no run for this message in the window)");
        else if (!was.end) print(`   recorded (run ${was.runId.slice(0, 8)}, ${was.model}): (the run had not ended)`);
        else print(`   recorded (run ${was.runId.slice(0, 8)}, ${was.model}, ${was.end.stopReason}): ${block(was.end.errorMessage ?? was.end.finalText)}\n   ${" ".repeat(9)}${formatUsage(was.end.usage, was.end.durationMs)}`);
        print(`   redrive  (${r.redrive.model}, ${r.redrive.stopReason}): ${block(r.redrive.errorMessage ?? r.redrive.finalText)}`);
        for (const s of r.redrive.steps) print(`   ${" ".repeat(9)}${s}`);
        print(`   ${" ".repeat(9)}${formatUsage(r.redrive.usage, r.redrive.durationMs)}`);
      },
    });
  } catch (err) {
    if (err instanceof RedriveRefused) throw new CommandError(err.field === "workspace" ? `--workspace ${err.message}` : `--${err.field}: ${err.message}`);
    throw err;
  }
  if (!results.length) {
    print(o.json ? JSON.stringify({ kind: "redrive", triggers: 0 }) : `nothing to redrive: no message in this window of ${qualifiedChannelId(ref)} asked mom for anything`);
  }
  return failed ? 1 : 0;
}

const block = (text: string) => (text.trim() || "(no text)").replace(/\n/g, "\n            ");
