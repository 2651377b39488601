import { type ChatMarkup, chatMarkup } from "@mom/format";
import { escape as escapeHtml } from "html-escaper";
import { type Dialect, fenceSafe, UNICODE_MARKS } from "./dialect.js";

/**
 * The dialect of a chat app with a markup of its own (WhatsApp's `*bold*`), from the same
 * `ChatMarkup` that converts the agent's Markdown to it: the notes use its bold, italic, code and
 * code blocks and its escaping of plain text, so the two never disagree.
 */
export function markupDialect(m: ChatMarkup, o: { limit: number; promptLimit?: number; mention(userId: string): string }): Dialect {
  return {
    limit: o.limit,
    ...(o.promptLimit !== undefined && { promptLimit: o.promptLimit }),
    escape: m.text ?? ((t) => escapeHtml(t)),
    bold: m.bold,
    italic: m.italic,
    code: m.code,
    codeBlock: (t) => m.codeBlock(fenceSafe(t.trimEnd()) || " "),
    mention: o.mention,
    fromMarkdown: chatMarkup(m),
    marks: UNICODE_MARKS,
  };
}
