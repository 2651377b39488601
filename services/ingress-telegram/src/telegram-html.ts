import { escape } from "html-escaper";
import { Marked, type Tokens } from "marked";

// Telegram's HTML parse mode knows b, i, s, u, a, code, pre and blockquote: everything else the
// agent writes in Markdown is mapped onto those (headings bold, lists as "•" lines, tables as
// preformatted text). marked parses; text is escaped by marked and html-escaper, never by hand.
const telegram = new Marked({
  gfm: true,
  async: false,
  renderer: {
    heading({ tokens }) {
      return `<b>${this.parser.parseInline(tokens)}</b>\n\n`;
    },
    paragraph({ tokens }) {
      return `${this.parser.parseInline(tokens)}\n\n`;
    },
    blockquote({ tokens }) {
      return `<blockquote>${this.parser.parse(tokens).trim()}</blockquote>\n\n`;
    },
    code({ text, lang }) {
      const language = lang?.match(/^[\w+-]+/)?.[0];
      return `<pre>${language ? `<code class="language-${language}">` : "<code>"}${escape(text)}</code></pre>\n\n`;
    },
    codespan({ text }) {
      return `<code>${escape(text)}</code>`;
    },
    html({ text }) {
      return escape(text);
    },
    // No longer than the Markdown it replaces: messages are split on Markdown length.
    hr() {
      return "———\n\n";
    },
    list(token: Tokens.List) {
      const start = typeof token.start === "number" ? token.start : 1;
      const lines = token.items.map((item, i) => `${token.ordered ? `${start + i}.` : "•"} ${this.parser.parse(item.tokens).trim()}`);
      return `${lines.join("\n")}\n\n`;
    },
    table(token: Tokens.Table) {
      return `<pre>${escape(token.raw.trim())}</pre>\n\n`;
    },
    strong({ tokens }) {
      return `<b>${this.parser.parseInline(tokens)}</b>`;
    },
    em({ tokens }) {
      return `<i>${this.parser.parseInline(tokens)}</i>`;
    },
    del({ tokens }) {
      return `<s>${this.parser.parseInline(tokens)}</s>`;
    },
    br() {
      return "\n";
    },
    link({ href, tokens }) {
      return `<a href="${escape(href)}">${this.parser.parseInline(tokens)}</a>`;
    },
    image({ href, text }) {
      return `<a href="${escape(href)}">${escape(text || href)}</a>`;
    },
  },
});

/** Markdown (as the agent and the shared notes write it) -> text for `parse_mode: "HTML"`. */
export function markdownToTelegramHtml(markdown: string): string {
  return (telegram.parse(markdown) as string).trim();
}
