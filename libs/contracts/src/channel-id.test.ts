import { describe, expect, it } from "@jest/globals";
import {
  escapeChannelToken,
  parseQualifiedChannelId,
  qualifiedChannelId,
  unescapeChannelToken,
} from "./channel-id.js";

describe("channel id escaping", () => {
  const ids = ["C0A34FL8PMH", "1234567890123", "-100123456", "a.b", "a*b>c", "with space", "tab\there", "~tilde", "ünï©ødé 🚀", "x~41"];

  it.each(ids)("round-trips %j into one subject token", (id) => {
    const token = escapeChannelToken(id);
    expect(token).toMatch(/^[A-Za-z0-9_~-]+$/);
    expect(unescapeChannelToken(token)).toBe(id);
  });

  it("leaves ordinary platform ids readable", () => {
    expect(escapeChannelToken("C0A34FL8PMH")).toBe("C0A34FL8PMH");
    expect(escapeChannelToken("-100123")).toBe("-100123");
    expect(escapeChannelToken("a.b")).toBe("a~2Eb");
  });

  it("is injective over many random strings", () => {
    const seen = new Map<string, string>();
    for (let i = 0; i < 2000; i++) {
      const id = Array.from({ length: 1 + (i % 7) }, (_, j) => String.fromCodePoint(32 + ((i * 31 + j * 17) % 400))).join("");
      const token = escapeChannelToken(id);
      if (seen.has(token)) expect(seen.get(token)).toBe(id);
      seen.set(token, id);
      expect(unescapeChannelToken(token)).toBe(id);
    }
  });

  it("rejects empty ids and malformed tokens", () => {
    expect(() => escapeChannelToken("")).toThrow(/empty/);
    expect(() => unescapeChannelToken("a.b")).toThrow(/invalid/);
    expect(() => unescapeChannelToken("~4")).toThrow(/invalid/);
    expect(() => unescapeChannelToken("~61")).toThrow(/non-canonical/); // "a" must not be escaped
  });
});

describe("qualified channel ids", () => {
  it("joins and splits at the first slash", () => {
    expect(qualifiedChannelId({ adapter: "slack-acme", channelId: "C1" })).toBe("slack-acme/C1");
    expect(parseQualifiedChannelId("cli/dev/null")).toEqual({ adapter: "cli", channelId: "dev/null" });
  });

  it("rejects bad adapters and missing parts", () => {
    expect(() => parseQualifiedChannelId("Slack/C1")).toThrow(/adapter/);
    expect(() => parseQualifiedChannelId("slack")).toThrow(/expected/);
    expect(() => parseQualifiedChannelId("slack/")).toThrow(/expected/);
    expect(() => qualifiedChannelId({ adapter: "a.b", channelId: "x" })).toThrow(/adapter/);
  });
});
