import type { LogEntry } from "@mom/contracts";
import type { SessionManager } from "@mariozechner/pi-coding-agent";
import type { UserMessage } from "@mariozechner/pi-ai";

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

type Entry = { type: string; customType?: string; data?: { lastId?: string; offset?: number }; message?: { role: string; content: unknown } };

/** A log entry with the byte offset just after its line in log.jsonl (the store's PlacedEntry). */
export interface PlacedLogEntry {
  entry: LogEntry;
  end: number;
}

/** Where the last sync stopped: the last synced log entry and the byte offset after its line. */
export interface SyncCursor {
  lastId: string;
  /** Absent in markers written before cursors existed: the reader then finds lastId by scanning once. */
  offset?: number;
}

/** The cursor of the last sync marker, if there is one. */
export function lastSyncCursor(sm: SessionManager): SyncCursor | undefined {
  const { lastId, offset } = sinceLastSync(sm);
  return lastId === undefined ? undefined : { lastId, ...(offset !== undefined && { offset }) };
}

/** The last sync marker, and the user lines the session got since (steered messages among them). */
function sinceLastSync(sm: SessionManager): { lastId?: string; offset?: number; seen: Set<string> } {
  const entries = sm.getEntries() as Entry[];
  const seen = new Set<string>();
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.type === "custom" && e.customType === LOG_SYNC_ENTRY) return { lastId: e.data?.lastId, offset: e.data?.offset, seen };
    if (e.type === "message" && e.message?.role === "user" && Array.isArray(e.message.content)) {
      for (const c of e.message.content as Array<{ type: string; text?: string }>) if (c.type === "text" && c.text) seen.add(c.text);
    }
  }
  return { seen };
}

/**
 * The mom behaviour: messages people wrote without mentioning mom still belong in its context.
 * Before a run, every log entry after the last synced one and before the trigger (other people's
 * messages; not mom's own answers, which the session already holds) is appended to the session as
 * a user message. `since` is what the log holds after the last sync marker (the store reads it
 * from the marker's byte offset, so the cost does not grow with the channel's history). Entries
 * after the trigger wait for their own run. Returns the messages it added, in order.
 */
export function syncLogToSession(sm: SessionManager, since: PlacedLogEntry[], triggerId: string): UserMessage[] {
  const triggerIndex = since.findIndex((p) => p.entry.id === triggerId);
  const end = triggerIndex === -1 ? since.length : triggerIndex;
  const { seen } = sinceLastSync(sm);
  const added: UserMessage[] = [];
  for (let i = 0; i < end; i++) {
    const e = since[i]!.entry;
    if (e.isBot && e.runId) continue;
    const text = formatChatLine(e);
    if (seen.has(text)) continue; // already in context, e.g. steered into the previous run
    const message: UserMessage = { role: "user", content: [{ type: "text", text }], timestamp: Date.parse(e.date) };
    sm.appendMessage(message);
    added.push(message);
  }
  const upTo = triggerIndex === -1 ? since.at(-1) : since[triggerIndex];
  if (upTo) sm.appendCustomEntry(LOG_SYNC_ENTRY, { lastId: upTo.entry.id, offset: upTo.end });
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
