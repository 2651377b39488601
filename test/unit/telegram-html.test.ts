import { describe, expect, it } from "@jest/globals";
// Lives outside the ingress: it checks the ingress's output with the test kit's Telegram HTML parser, and an ingress imports nothing of mom but the SDK.
import { parseTelegramHtml } from "@mom/testing";
import { markdownToTelegramHtml } from "@mom/ingress-telegram";

describe("markdownToTelegramHtml", () => {
  it("maps Markdown onto Telegram's tags and escapes the rest", () => {
    expect(markdownToTelegramHtml("# Plan\n\nUse **bold**, _it_, `a<b>` and [docs](https://x.y/?a=1&b=2).")).toBe(
      '<b>Plan</b>\n\nUse <b>bold</b>, <i>it</i>, <code>a&lt;b&gt;</code> and <a href="https://x.y/?a=1&amp;b=2">docs</a>.',
    );
    expect(markdownToTelegramHtml("```ts\nif (a < b && c) {}\n```")).toBe('<pre><code class="language-ts">if (a &lt; b &amp;&amp; c) {}</code></pre>');
    expect(markdownToTelegramHtml("- one\n- two\n\n1. x\n2. y")).toBe("• one\n• two\n\n1. x\n2. y");
    expect(markdownToTelegramHtml("5 < 6 & <script>alert(1)</script>")).toBe("5 &lt; 6 &amp; &lt;script&gt;alert(1)&lt;/script&gt;");
  });

  it("always yields HTML that Telegram's parser accepts", () => {
    const samples = [
      "| a | b |\n|---|---|\n| 1 | 2 |",
      "> quoted **text**\n> more",
      "***nested*** ~~gone~~ ![img](http://i/x.png)",
      "\\_not italic\\_ 3 \\* 4 = 12",
      "<b>raw html</b> & <i>",
      "- [ ] task\n  - nested `code`",
    ];
    for (const md of samples) expect(parseTelegramHtml(markdownToTelegramHtml(md))).not.toHaveProperty("error");
  });
});
