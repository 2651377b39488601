import { describe, expect, it } from "@jest/globals";
import type { ChatMarkup } from "@mom/format";
import { markupDialect } from "./markup-dialect.js";

const starMarkup: ChatMarkup = {
  bold: (t) => `*${t}*`,
  italic: (t) => `_${t}_`,
  strike: (t) => `~${t}~`,
  code: (t) => `\`${t}\``,
  codeBlock: (t) => `\`\`\`\n${t}\n\`\`\``,
  quote: (t) => `> ${t}`,
  link: (href, text) => `${text} (${href})`,
  image: (href) => href,
  html: (t) => t,
  bullet: "-",
  rule: "---",
};

describe("markupDialect", () => {
  it("the notes' markup is the converter's: bold, italic, code, fence-safe code blocks, its escaping", () => {
    const d = markupDialect({ ...starMarkup, text: (t) => t }, { limit: 4096, promptLimit: 1024, mention: (id) => `+${id}` });
    expect([d.limit, d.promptLimit, d.mention("49")]).toEqual([4096, 1024, "+49"]);
    expect([d.bold("a"), d.italic("b"), d.code("c"), d.escape("<x> *y*")]).toEqual(["*a*", "_b_", "`c`", "<x> *y*"]);
    expect(d.codeBlock("a ``` b\n\n")).toBe("```\na ``\u200b` b\n```");
    expect(d.codeBlock("")).toBe("```\n \n```");
    expect(d.fromMarkdown("**hi** and `x`")).toBe("*hi* and `x`");
  });

  it("without a `text` of its own, plain text is HTML-escaped, as the converter does", () => {
    const d = markupDialect(starMarkup, { limit: 100, mention: (id) => id });
    expect(d.escape("a < b & c")).toBe("a &lt; b &amp; c");
    expect(d.promptLimit).toBeUndefined();
  });
});
