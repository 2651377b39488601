import type { LogEntry } from "@mom/contracts";
import type { SessionManager } from "@mariozechner/pi-coding-agent";
import type { UserMessage } from "@mariozechner/pi-ai";

export const LOG_SYNC_ENTRY = "mom.log-sync";

/** Most characters of one message the model reads (a pasted log belongs in a file, not a prompt). */
export const MESSAGE_MAX_CHARS = 50_000;

/**
 * How a chat message reads to the model: `[date] [@user]: text`, plus its attachments. A saved
 * file is listed by its path relative to the channel directory (the agent's working directory),
 * e.g. `attachments/1732184400000-report.pdf`; one that could not be saved by its name and why.
 */
export function formatChatLine(e: Pick<LogEntry, "date" | "userName" | "text" | "attachments">): string {
  const text =
    e.text.length <= MESSAGE_MAX_CHARS
      ? e.text
      : `${e.text.slice(0, MESSAGE_MAX_CHARS)}\n[message cut: ${MESSAGE_MAX_CHARS.toLocaleString("en")} of ${e.text.length.toLocaleString("en")} characters shown; the whole message is in log.jsonl]`;
  const files = e.attachments.map((a) =>
    a.localPath ? channelRelative(a.localPath) : `${a.filename} (not available${a.note ? `: ${a.note}` : ""})`,
  );
  const attachments = files.length ? `\n\nAttachments:\n${files.map((f) => `- ${f}`).join("\n")}` : "";
  return `[${e.date}] [@${e.userName}]: ${text}${attachments}`;
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

/** Most characters of unsynced chat lines one run puts into the context (about 25k tokens). */
export const HISTORY_MAX_CHARS = 100_000;
/** Most bytes of log.jsonl read for one sync: the newest lines that can fit, never the whole history. */
export const HISTORY_READ_BYTES = 1 << 20;

/**
 * The mom behaviour: messages people wrote without mentioning mom still belong in its context.
 * Before a run, the log entries after the last synced one and before the trigger (other people's
 * messages; not mom's own answers, which the session already holds) are appended to the session
 * as user messages — the newest of them, up to `maxChars`; when older ones are left out (or the
 * store left `skippedBytes` of older log unread), a note before them says how many and where they
 * are. `since` is what the log holds after the last sync marker (the store reads it from the
 * marker's byte offset, so the cost does not grow with the channel's history). Entries after the
 * trigger wait for their own run. Returns the messages it added, in order.
 */
export function syncLogToSession(
  sm: SessionManager,
  since: PlacedLogEntry[],
  triggerId: string,
  opts: { skippedBytes?: number; maxChars?: number } = {},
): UserMessage[] {
  const { lastId, seen } = sinceLastSync(sm);
  // The last sync already went up to this very message (an attempt stopped after its sync, before
  // its prompt): everything in `since` came after it and waits for its own run.
  if (lastId === triggerId) return [];
  const triggerIndex = since.findIndex((p) => p.entry.id === triggerId);
  const end = triggerIndex === -1 ? since.length : triggerIndex;
  const lines: Array<{ entry: LogEntry; text: string }> = [];
  for (let i = 0; i < end; i++) {
    const e = since[i]!.entry;
    if (e.isBot && e.runId) continue;
    const text = formatChatLine(e);
    if (seen.has(text)) continue; // already in context, e.g. steered into the previous run
    lines.push({ entry: e, text });
  }
  let keepFrom = lines.length;
  for (let used = 0; keepFrom > 0 && used + lines[keepFrom - 1]!.text.length <= (opts.maxChars ?? HISTORY_MAX_CHARS); keepFrom--) used += lines[keepFrom - 1]!.text.length;
  const added: UserMessage[] = [];
  const add = (text: string, date: string) => {
    const message: UserMessage = { role: "user", content: [{ type: "text", text }], timestamp: Date.parse(date) };
    sm.appendMessage(message);
    added.push(message);
  };
  const left = lines.slice(0, keepFrom);
  const skippedBytes = opts.skippedBytes ?? 0;
  if (left.length || skippedBytes > 0) add(leftOutNote(left.map((l) => l.entry), skippedBytes), (left[0]?.entry ?? lines[keepFrom]?.entry ?? since[0]?.entry)?.date ?? new Date().toISOString());
  for (const { entry, text } of lines.slice(keepFrom)) add(text, entry.date);
  const upTo = triggerIndex === -1 ? since.at(-1) : since[triggerIndex];
  if (upTo) sm.appendCustomEntry(LOG_SYNC_ENTRY, { lastId: upTo.entry.id, offset: upTo.end });
  return added;
}

function leftOutNote(left: LogEntry[], skippedBytes: number): string {
  const what = [
    left.length && `${left.length} earlier message${left.length === 1 ? "" : "s"} (${left[0]!.date} to ${left.at(-1)!.date})`,
    skippedBytes > 0 && `${(skippedBytes / 1_048_576).toFixed(1)} MB of older log lines before them`,
  ]
    .filter(Boolean)
    .join(" and ");
  return (
    `[mom: ${what} of this channel were left out of your context to keep it small. ` +
    "Everything said here is in log.jsonl in your working directory, one JSON object per line (newest last): use tail or grep on it when the conversation needs them.]"
  );
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
