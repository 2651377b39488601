import { escape as escapeHtml } from "html-escaper";
import markdownEscape from "markdown-escape";
import { Marked } from "marked";
import { type Dialect, fenceSafe, UNICODE_MARKS } from "./dialect.js";

/**
 * The dialect of a platform that shows the agent's own Markdown (Matrix, Telegram, e-mail): the
 * notes are written in Markdown too (plain text escaped with markdown-escape), so a message is
 * split as Markdown and turned into the platform's markup (markdownToHtml) only as it is sent.
 */
export function markdownDialect(o: { limit: number; promptLimit?: number; mention(userId: string): string }): Dialect {
  return {
    limit: o.limit,
    ...(o.promptLimit !== undefined && { promptLimit: o.promptLimit }),
    escape: (t) => markdownEscape(t),
    bold: (t) => `**${t}**`,
    italic: (t) => `_${t}_`,
    // A code span that contains backticks is delimited by two (CommonMark).
    code: (t) => (t.includes("`") ? `\`\` ${t} \`\`` : `\`${t}\``),
    codeBlock: (t) => "```\n" + (fenceSafe(t.trimEnd()) || " ") + "\n```",
    mention: o.mention,
    fromMarkdown: (md) => md,
    marks: UNICODE_MARKS,
  };
}

// HTML the agent wrote itself is shown as text, never passed to a client to interpret.
const html = new Marked({ gfm: true, async: false, renderer: { html: ({ text }) => escapeHtml(text) } });

/** Markdown (GitHub's) as HTML, as marked renders it by default, with raw HTML in it escaped. */
export function markdownToHtml(markdown: string): string {
  return html.parse(markdown) as string;
}
