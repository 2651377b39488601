import { shownToolReview } from "./tool-review-view.js";

describe("a tool review as the approver reads it", () => {
  it("spells out bidi overrides and hidden characters in a diff and a path, keeping the diff's lines", () => {
    const trojan = '+    if (user !== "admin\u202E \u2066// check later\u2069 \u2066") {\n+    ok\u200B()\n';
    const [t] = shownToolReview([
      { name: "greet", state: "changed", sha256: "a".repeat(64), files: 1, copyKept: true, changes: [{ path: "greet/ind\u202Eex.ts", change: "changed", diff: trojan }] },
    ]);
    const c = t!.changes[0]!;
    expect(c.diff).not.toMatch(/[\u202A-\u202E\u2066-\u2069\u200B]/);
    expect(c.diff).toContain("U+202E");
    expect(c.diff!.split("\n")).toHaveLength(3);
    expect(c.path).not.toContain("\u202E");
    expect(c.path).toContain("U+202E");
  });
});
