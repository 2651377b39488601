import { APPROVAL_TEXT_LIMITS, approvalDisplayLength, visible } from "@mom/contracts";

/**
 * Longest summary the terminal shows. Each adapter type has its own limit
 * (`APPROVAL_TEXT_LIMITS` in @mom/contracts: what its prompt shows whole); the runner passes the
 * channel's.
 */
export const MAX_APPROVAL_TEXT = APPROVAL_TEXT_LIMITS.cli!;

export type ApprovalText = { ok: true; text: string } | { ok: false; reason: string };

/**
 * Argument names that say where a call acts (the file, the channel, the URL…): shown first, in
 * this order, so the approver reads the target before any content.
 */
export const TARGET_KEYS = [
  "path", "file", "filePath", "file_path", "filename", "dir", "directory", "cwd",
  "channel", "channelId", "channel_id", "to", "recipient", "recipients", "chat", "chatId", "user", "userId",
  "url", "uri", "href", "host", "hostname", "endpoint", "repo", "repository", "owner", "project",
  "target", "destination", "dest", "from", "source", "src", "id", "name", "tool",
];

/** The margin of a multi-line value's lines: a line cannot pass for another argument. */
const GUTTER = "│ ";

const isPlainKey = (k: string) => /^[A-Za-z0-9_.$-]+$/.test(k);
const showKey = (k: string) => visible(isPlainKey(k) ? k : JSON.stringify(k), { newlines: false });

function showValue(key: string, v: unknown): string {
  if (typeof v !== "string") return `${key}: ${visible(JSON.stringify(v) ?? String(v), { newlines: false })}`;
  if (!v.includes("\n")) {
    // Quoted when blank or padded, so leading and trailing spaces show.
    return `${key}: ${visible(v === "" || v.trim() !== v ? JSON.stringify(v) : v, { newlines: false })}`;
  }
  const lines = v.split("\n");
  const head = `${key} (${lines.length} lines):`;
  return [head, ...lines.map((l) => (l ? `${GUTTER}${visible(l, { newlines: false })}` : GUTTER.trimEnd()))].join("\n");
}

/**
 * The arguments of any tool as an approver reads them: the target first (TARGET_KEYS), then the
 * other short values, then multi-line ones as blocks under their name; every value in full, every
 * invisible character spelled (`visible`). `label` is the model's description of the call, not an
 * argument of what runs: left out.
 */
export function argumentsText(args: unknown): string {
  if (args === null || typeof args !== "object" || Array.isArray(args)) return visible(JSON.stringify(args ?? null), { newlines: false });
  const entries = Object.entries(args as Record<string, unknown>).filter(([k]) => k !== "label");
  if (!entries.length) return "(no arguments)";
  const rank = ([k, v]: [string, unknown]) => {
    const t = TARGET_KEYS.indexOf(k);
    if (t >= 0) return t;
    return TARGET_KEYS.length + (typeof v === "string" && v.includes("\n") ? 2 : typeof v === "object" && v !== null ? 1 : 0);
  };
  const ordered = entries.map((e, i) => ({ e, i, r: rank(e) })).sort((a, b) => a.r - b.r || a.i - b.i);
  return ordered.map(({ e: [k, v] }) => showValue(showKey(k), v)).join("\n");
}

/**
 * What an approver is shown for a call, or why it cannot be shown. bash: the exact command line
 * that will run (newlines as line breaks, not JSON escapes); other tools: `argumentsText`. Both
 * with every invisible character spelled out. A summary longer than `limit` (the channel's
 * adapter's) is refused: nothing an approver approves is past a clip.
 */
export function approvalText(toolId: string, args: unknown, limit = MAX_APPROVAL_TEXT): ApprovalText {
  const a = (args ?? {}) as Record<string, unknown>;
  const bash = toolId === "bash" && typeof a.command === "string";
  // visible() only lengthens: a raw text over the limit is refused without spelling it out.
  const raw = bash ? (a.command as string).length : Object.values(a).reduce<number>((n, v) => n + (typeof v === "string" ? v.length : 0), 0) - (typeof a.label === "string" ? a.label.length : 0);
  const text = raw > limit ? undefined : bash ? `${visible(a.command as string)}${typeof a.timeout === "number" ? ` (timeout ${a.timeout} s)` : ""}` : argumentsText(args);
  const length = text === undefined ? raw : approvalDisplayLength(text);
  if (length <= limit) return { ok: true, text: text! };
  const reason = bash
    ? `the command is ${length} characters as shown to an approver (control and invisible characters spelled out), too long to show an approver in full (at most ${limit} here); split it into shorter commands`
    : `its arguments are ${length} characters as shown to an approver, too long to show an approver in full (at most ${limit} here); make smaller calls (e.g. write a file in parts: a short write, then edits that add to it)`;
  return { ok: false, reason };
}
