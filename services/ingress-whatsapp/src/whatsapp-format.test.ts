import { describe, expect, it } from "@jest/globals";
import { markdownToWhatsApp } from "./whatsapp-format.js";

describe("markdownToWhatsApp", () => {
  it("writes Markdown in WhatsApp's markup, text untouched", () => {
    expect(markdownToWhatsApp("# Plan\n\nUse **bold**, _it_, ~~old~~, `x < y & z` and [docs](https://x.y/?a=1&b=2).")).toBe(
      "*Plan*\n\nUse *bold*, _it_, ~old~, `x < y & z` and docs (https://x.y/?a=1&b=2).",
    );
    expect(markdownToWhatsApp("```ts\nif (a < b) {}\n```\n\n- one\n- two\n\n> said")).toBe("```\nif (a < b) {}\n```\n\n- one\n- two\n\n> said");
    expect(markdownToWhatsApp("Tom & Jerry's <b>")).toBe("Tom & Jerry's <b>");
  });
});
