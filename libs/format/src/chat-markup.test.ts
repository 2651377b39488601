import { describe, expect, it } from "@jest/globals";
import { chatMarkup } from "./chat-markup.js";

describe("chatMarkup", () => {
  // An HTML-tag markup (as Telegram's): marked escapes plain text unless `text` is given.
  const tags = chatMarkup({
    bold: (t) => `<b>${t}</b>`,
    italic: (t) => `<i>${t}</i>`,
    strike: (t) => `<s>${t}</s>`,
    code: (t) => `<code>${t.replace(/</g, "&lt;")}</code>`,
    codeBlock: (t, lang) => `<pre lang="${lang ?? ""}">${t.replace(/</g, "&lt;")}</pre>`,
    quote: (t) => `<blockquote>${t}</blockquote>`,
    link: (href, t) => `<a href="${href}">${t}</a>`,
    image: (href, alt) => `<a href="${href}">${alt}</a>`,
    html: (t) => t.replace(/</g, "&lt;"),
    table: (raw) => `<pre>${raw}</pre>`,
    bullet: "•",
    rule: "———",
  });

  it("writes headings bold, lists as lines, quotes, code, tables and rules in the app's forms", () => {
    expect(tags("# Plan\n\n1. **a** & _b_\n2. ~~c~~\n\n- [x](https://x.y)\n\n> q\n\n---\n\n```ts\na < b\n```\n\n| h |\n| - |\n| v |")).toBe(
      '<b>Plan</b>\n\n1. <b>a</b> &amp; <i>b</i>\n2. <s>c</s>\n\n• <a href="https://x.y">x</a>\n\n<blockquote>q</blockquote>\n\n———\n\n<pre lang="ts">a &lt; b</pre>\n\n<pre>| h |\n| - |\n| v |</pre>',
    );
  });

  it("keeps ordered lists' start and shows the agent's HTML as text", () => {
    expect(tags("3. x\n4. y\n\n<b>hi</b>")).toBe("3. x\n4. y\n\n&lt;b>hi&lt;/b>");
  });
});
