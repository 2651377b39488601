import type { LogEntry } from "@mom/contracts";
import type { SessionManager } from "@mariozechner/pi-coding-agent";

export const LOG_SYNC_ENTRY = "mom.log-sync";

/**
 * How a chat message reads to the model: `[date] [@user]: text`, plus its attachments. A saved
 * file is listed by its path relative to the channel directory (the agent's working directory),
 * e.g. `attachments/1732184400000-report.pdf`; one that could not be saved by its name and why.
 */
export function formatChatLine(e: Pick<LogEntry, "date" | "userName" | "text" | "attachments">): string {
  const files = e.attachments.map((a) =>
    a.localPath ? channelRelative(a.localPath) : `${a.filename} (not available${a.note ? `: ${a.note}` : ""})`,
  );
  const attachments = files.length ? `\n\nAttachments:\n${files.map((f) => `- ${f}`).join("\n")}` : "";
  return `[${e.date}] [@${e.userName}]: ${e.text}${attachments}`;
}

/** `channels/<adapter>/<channel>/attachments/x` (workspace-relative, as logged) -> `attachments/x`. */
function channelRelative(localPath: string): string {
  return localPath.replace(/^channels\/[^/]+\/[^/]+\//, "");
}

type Entry = { type: string; customType?: string; data?: { lastId?: string }; message?: { role: string; content: unknown } };

/** The last sync marker, and the user lines the session got since (steered messages among them). */
function sinceLastSync(sm: SessionManager): { lastId?: string; seen: Set<string> } {
  const entries = sm.getEntries() as Entry[];
  const seen = new Set<string>();
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.type === "custom" && e.customType === LOG_SYNC_ENTRY) return { lastId: e.data?.lastId, seen };
    if (e.type === "message" && e.message?.role === "user" && Array.isArray(e.message.content)) {
      for (const c of e.message.content as Array<{ type: string; text?: string }>) if (c.type === "text" && c.text) seen.add(c.text);
    }
  }
  return { seen };
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
  const { lastId, seen } = sinceLastSync(sm);
  const lastIndex = lastId === undefined ? -1 : log.findIndex((e) => e.id === lastId);
  let added = 0;
  for (let i = lastIndex + 1; i < end; i++) {
    const e = log[i]!;
    if (e.isBot && e.runId) continue;
    const text = formatChatLine(e);
    if (seen.has(text)) continue; // already in context, e.g. steered into the previous run
    sm.appendMessage({ role: "user", content: [{ type: "text", text }], timestamp: Date.parse(e.date) });
    added++;
  }
  sm.appendCustomEntry(LOG_SYNC_ENTRY, { lastId: triggerIndex === -1 ? log.at(-1)?.id : triggerId });
  return added;
}

/**
 * Whether a run for this message already put it into the session: the sync marker written just
 * before its prompt names it, and a user turn follows. (A crash before pi saved anything leaves
 * neither, and the message is prompted as usual.)
 */
export function wasPrompted(sm: SessionManager, triggerId: string): boolean {
  const entries = sm.getEntries() as Entry[];
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.type === "custom" && e.customType === LOG_SYNC_ENTRY) {
      return e.data?.lastId === triggerId && entries.slice(i + 1).some((x) => x.type === "message" && x.message?.role === "user");
    }
  }
  return false;
}
