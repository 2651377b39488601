/** How a platform writes text: the few markup pieces the shared notes need, and its message limit. */
export interface Dialect {
  /** Characters in one message. */
  limit: number;
  /** Characters an approval prompt may take, when less than `limit` (WhatsApp's button body). */
  promptLimit?: number;
  /** Makes plain text safe to embed in this dialect's markup. */
  escape(text: string): string;
  bold(text: string): string;
  italic(text: string): string;
  code(text: string): string;
  /**
   * A fenced block that no text inside can close early, showing `text` as it is: nothing in it
   * is markup, a link or a mention. May add at most one (invisible) character per ``` in `text`.
   */
  codeBlock(text: string): string;
  /** A user by platform id, the way that pings them. */
  mention(userId: string): string;
  /** Turns the agent's Markdown (with `@username` mentions) into this dialect. */
  fromMarkdown(markdown: string): string;
  marks: Marks;
}

/** The symbols notes start with (emoji shortcodes on Slack, Unicode elsewhere). */
export interface Marks {
  working: string;
  ok: string;
  failed: string;
  denied: string;
  pending: string;
  stopped: string;
  warning: string;
  retry: string;
  approval: string;
  expired: string;
  usage: string;
  file: string;
}

export const UNICODE_MARKS: Marks = {
  working: "⏳",
  ok: "✓",
  failed: "✗",
  denied: "⊘",
  pending: "…",
  stopped: "■",
  warning: "⚠",
  retry: "↻",
  approval: "🔐",
  expired: "⌛",
  usage: "📊",
  file: "📎",
};

export const clip = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
export const firstLine = (s: string): string => clip(s.trim().split("\n")[0] ?? "", 200);
/** Keeps text from closing the ``` fence it is shown in. */
export const fenceSafe = (s: string): string => s.replace(/```/g, "``\u200b`");

/** A plain-text dialect (the terminal; a base for others). */
export function plainDialect(limit = Number.MAX_SAFE_INTEGER): Dialect {
  return {
    limit,
    escape: (t) => t,
    bold: (t) => t,
    italic: (t) => t,
    code: (t) => t,
    codeBlock: (t) => t,
    mention: (id) => `@${id}`,
    fromMarkdown: (md) => md,
    marks: UNICODE_MARKS,
  };
}
