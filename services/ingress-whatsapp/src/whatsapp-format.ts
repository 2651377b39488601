import { Marked, type Tokens } from "marked";

// WhatsApp's own markup: *bold*, _italic_, ~strike~, `code`, ```block```, "> " quotes and
// "- " lists; no links (URLs are shown as they are), no headings, no escaping. marked parses the
// agent's Markdown; each construct is written in WhatsApp's form, text as it is.
const whatsapp = new Marked({
  gfm: true,
  async: false,
  renderer: {
    heading({ tokens }) {
      return `*${this.parser.parseInline(tokens)}*\n\n`;
    },
    paragraph({ tokens }) {
      return `${this.parser.parseInline(tokens)}\n\n`;
    },
    blockquote({ tokens }) {
      return `${this.parser.parse(tokens).trim().split("\n").map((l) => `> ${l}`).join("\n")}\n\n`;
    },
    code({ text }) {
      return `\`\`\`\n${text}\n\`\`\`\n\n`;
    },
    codespan({ text }) {
      return `\`${text}\``;
    },
    html({ text }) {
      return text;
    },
    hr() {
      return "——————\n\n";
    },
    list(token: Tokens.List) {
      const start = typeof token.start === "number" ? token.start : 1;
      const lines = token.items.map((item, i) => `${token.ordered ? `${start + i}.` : "-"} ${this.parser.parse(item.tokens).trim()}`);
      return `${lines.join("\n")}\n\n`;
    },
    table(token: Tokens.Table) {
      return `\`\`\`\n${token.raw.trim()}\n\`\`\`\n\n`;
    },
    strong({ tokens }) {
      return `*${this.parser.parseInline(tokens)}*`;
    },
    em({ tokens }) {
      return `_${this.parser.parseInline(tokens)}_`;
    },
    del({ tokens }) {
      return `~${this.parser.parseInline(tokens)}~`;
    },
    br() {
      return "\n";
    },
    link({ href, tokens }) {
      const text = this.parser.parseInline(tokens);
      return text === href ? href : `${text} (${href})`;
    },
    image({ href, text }) {
      return text ? `${text} (${href})` : href;
    },
    text(token: Tokens.Text | Tokens.Escape) {
      return "tokens" in token && token.tokens ? this.parser.parseInline(token.tokens) : token.text;
    },
    space() {
      return "";
    },
  },
});

/** The agent's Markdown as WhatsApp shows it. */
export function markdownToWhatsApp(markdown: string): string {
  return (whatsapp.parse(markdown) as string).trim();
}
