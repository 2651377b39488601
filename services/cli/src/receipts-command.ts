import { loadConfig } from "@mom/config";
import { WorkspaceLayout } from "@mom/store";
import { channelArg } from "./channel-arg.js";

/** `mom receipts <adapter/channel> [--run ID] [dataDir]`: the append-only trail, oldest first. */
export async function receiptsTrail(qualified: string, dataDir: string, runId?: string): Promise<string> {
  const ref = channelArg(qualified);
  const loaded = loadConfig(dataDir);
  const store = new WorkspaceLayout(loaded.paths.workspaceDir).channel(ref);
  const { entries, skipped } = await store.readReceipts();
  const rows = entries.filter((r) => !runId || r.runId === runId);
  const lines = rows.map((r) =>
    [r.ts, r.type.padEnd(19), r.toolId, `[${r.risk}]`, `run ${r.runId}`, `call ${r.toolCallId || "-"}`, r.parentToolCallId ? `within call ${r.parentToolCallId}` : "", r.actor ? `by ${r.actor}` : "", r.detail ? `— ${r.detail}` : ""]
      .filter(Boolean)
      .join("  "),
  );
  if (lines.length === 0) lines.push(runId ? `no receipts for run ${runId} in ${qualified}` : `no receipts in ${qualified}`);
  for (const s of skipped) lines.push(`(skipped line ${s.line} of receipts.jsonl: ${s.reason})`);
  return lines.join("\n");
}
