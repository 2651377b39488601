import { describe, expect, it } from "@jest/globals";
import { defuseMentions, splitCode } from "./mentions.js";

describe("defuseMentions", () => {
  it("makes every mention outside code inert and lists it once", () => {
    expect(defuseMentions("@ann and @ann, @acme/core-team; (@bob-x) [@eve](https://x.test)\n@carol")).toEqual({
      text: "@&#8203;ann and @&#8203;ann, @&#8203;acme/core-team; (@&#8203;bob-x) [@&#8203;eve](https://x.test)\n@&#8203;carol",
      mentions: ["@ann", "@acme/core-team", "@bob-x", "@eve", "@carol"],
    });
  });

  it("leaves e-mail addresses, a lone @ and text already defused alone", () => {
    const text = "write to ann@example.org or me_@x.test; @ alone; @-nope; already @&#8203;ann";
    expect(defuseMentions(text)).toEqual({ text, mentions: [] });
    const once = defuseMentions("hi @ann").text;
    expect(defuseMentions(once)).toEqual({ text: once, mentions: [] });
  });

  it("catches a mention that a character GitHub does not count as part of a word puts right before the @", () => {
    expect(defuseMentions("x&@ann x/@bob x.@carol x`@dan").text).toBe("x&@&#8203;ann x/@&#8203;bob x.@&#8203;carol x`@&#8203;dan");
  });

  it("leaves code alone: spans of any backtick run, fenced blocks with ``` or ~~~, an unclosed fence to the end", () => {
    const text = "`@a` and ``has ` @b`` but @c\n```js\n@d\n```\n@e\n~~~\n@f\n~~~\n   ```\n@g";
    expect(defuseMentions(text).text).toBe("`@a` and ``has ` @b`` but @&#8203;c\n```js\n@d\n```\n@&#8203;e\n~~~\n@f\n~~~\n   ```\n@g");
  });

  it("an unclosed backtick is plain text, so the mention after it is defused", () => {
    expect(defuseMentions("a ` then @ann").text).toBe("a ` then @&#8203;ann");
  });
});

describe("splitCode", () => {
  it("splits prose from code and loses nothing", () => {
    const text = "a `b` c\n```\nd\n```\ne";
    const parts = splitCode(text);
    expect(parts.map((p) => p.text).join("")).toBe(text);
    expect(parts).toEqual([
      { code: false, text: "a " },
      { code: true, text: "`b`" },
      { code: false, text: " c\n" },
      { code: true, text: "```\nd\n```\n" },
      { code: false, text: "e" },
    ]);
  });
});
