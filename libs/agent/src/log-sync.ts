import type { LogEntry } from "@mom/contracts";
import type { SessionManager } from "@mariozechner/pi-coding-agent";

export const LOG_SYNC_ENTRY = "mom.log-sync";

/** How a chat message reads to the model: `[date] [@user]: text`, plus any attachment paths. */
export function formatChatLine(e: Pick<LogEntry, "date" | "userName" | "text" | "attachments">): string {
  const files = e.attachments.filter((a) => a.localPath).map((a) => a.localPath);
  const attachments = files.length ? `\n\nAttachments:\n${files.map((f) => `- ${f}`).join("\n")}` : "";
  return `[${e.date}] [@${e.userName}]: ${e.text}${attachments}`;
}

function lastSyncedId(sm: SessionManager): string | undefined {
  const entries = sm.getEntries();
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i] as { type: string; customType?: string; data?: { lastId?: string } };
    if (e.type === "custom" && e.customType === LOG_SYNC_ENTRY) return e.data?.lastId;
  }
  return undefined;
}

/**
 * The mom behaviour: messages people wrote without mentioning mom still belong in its context.
 * Before a run, every log entry between the last synced one and the trigger (other people's
 * messages; not mom's own answers, which the session already holds) is appended to the session as
 * a user message. Entries after the trigger wait for their own run. Returns how many were added.
 */
export function syncLogToSession(sm: SessionManager, log: LogEntry[], triggerId: string): number {
  const triggerIndex = log.findIndex((e) => e.id === triggerId);
  const end = triggerIndex === -1 ? log.length : triggerIndex;
  const lastId = lastSyncedId(sm);
  const lastIndex = lastId === undefined ? -1 : log.findIndex((e) => e.id === lastId);
  let added = 0;
  for (let i = lastIndex + 1; i < end; i++) {
    const e = log[i]!;
    if (e.isBot && e.runId) continue;
    sm.appendMessage({ role: "user", content: [{ type: "text", text: formatChatLine(e) }], timestamp: Date.parse(e.date) });
    added++;
  }
  sm.appendCustomEntry(LOG_SYNC_ENTRY, { lastId: triggerIndex === -1 ? log.at(-1)?.id : triggerId });
  return added;
}
