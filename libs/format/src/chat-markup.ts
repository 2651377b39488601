import { Marked, type Tokens } from "marked";

// Chat apps with a markup of their own (WhatsApp's *bold* _italic_ ~strike~, Telegram's few HTML
// tags) have no headings, lists, tables or rules. The agent's Markdown is parsed by marked and each
// construct written in the forms the app has: headings bold, lists as lines, tables as a code
// block, rules as a line of dashes. The app's markup gives only its inline forms.

export interface ChatMarkup {
  bold(inner: string): string;
  italic(inner: string): string;
  strike(inner: string): string;
  /** Inline code; `text` as written (escape it here if the app needs it). */
  code(text: string): string;
  /** A fenced block; `lang` as the Markdown named it. */
  codeBlock(text: string, lang?: string): string;
  /** A block quote around its rendered content. */
  quote(inner: string): string;
  link(href: string, inner: string): string;
  image(href: string, alt: string): string;
  /** HTML the agent wrote: shown as text. */
  html(text: string): string;
  /** Plain text; default marked's (HTML-escaped). */
  text?(text: string): string;
  /** A table's Markdown source; default `codeBlock`. */
  table?(raw: string): string;
  /** Marks an unordered list item (ordered ones are numbered). */
  bullet: string;
  /** What a horizontal rule becomes. */
  rule: string;
}

/** A converter from Markdown to the app's markup (see the file comment). */
export function chatMarkup(m: ChatMarkup): (markdown: string) => string {
  const marked = new Marked({
    gfm: true,
    async: false,
    renderer: {
      heading({ tokens }) {
        return `${m.bold(this.parser.parseInline(tokens))}\n\n`;
      },
      paragraph({ tokens }) {
        return `${this.parser.parseInline(tokens)}\n\n`;
      },
      blockquote({ tokens }) {
        return `${m.quote(this.parser.parse(tokens).trim())}\n\n`;
      },
      code: ({ text, lang }) => `${m.codeBlock(text, lang)}\n\n`,
      codespan: ({ text }) => m.code(text),
      html: ({ text }) => m.html(text),
      hr: () => `${m.rule}\n\n`,
      list(token: Tokens.List) {
        const start = typeof token.start === "number" ? token.start : 1;
        const lines = token.items.map((item, i) => `${token.ordered ? `${start + i}.` : m.bullet} ${this.parser.parse(item.tokens).trim()}`);
        return `${lines.join("\n")}\n\n`;
      },
      table: (token: Tokens.Table) => `${(m.table ?? m.codeBlock)(token.raw.trim())}\n\n`,
      strong({ tokens }) {
        return m.bold(this.parser.parseInline(tokens));
      },
      em({ tokens }) {
        return m.italic(this.parser.parseInline(tokens));
      },
      del({ tokens }) {
        return m.strike(this.parser.parseInline(tokens));
      },
      br: () => "\n",
      link({ href, tokens }) {
        return m.link(href, this.parser.parseInline(tokens));
      },
      image: ({ href, text }) => m.image(href, text),
      ...(m.text && {
        text(token: Tokens.Text | Tokens.Escape) {
          return "tokens" in token && token.tokens ? this.parser.parseInline(token.tokens) : m.text!(token.text);
        },
      }),
      space: () => "",
    },
  });
  return (markdown) => (marked.parse(markdown) as string).trim();
}
