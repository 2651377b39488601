import { describe, expect, it } from "@jest/globals";
import { splitMessage } from "./split-message.js";

const fencesBalanced = (chunk: string) => (chunk.match(/^```/gm) ?? []).length % 2 === 0;

describe("splitMessage", () => {
  it("returns short text unchanged", () => {
    expect(splitMessage("hello **world**\n\n- a\n- b", 2000)).toEqual(["hello **world**\n\n- a\n- b"]);
  });

  it("cuts between paragraphs and keeps every chunk under the limit", () => {
    const paras = Array.from({ length: 40 }, (_, i) => `Paragraph ${i}: ${"lorem ipsum ".repeat(10).trim()}`);
    const chunks = splitMessage(paras.join("\n\n"), 500);
    expect(chunks.length).toBeGreaterThan(1);
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(500);
    expect(chunks.join("\n\n")).toBe(paras.join("\n\n"));
  });

  it("splits a long code block into complete code blocks with the language kept", () => {
    const code = Array.from({ length: 300 }, (_, i) => `const x${i} = ${i};`).join("\n");
    const text = `Here is the code:\n\n\`\`\`ts\n${code}\n\`\`\`\n\nThat's all.`;
    const chunks = splitMessage(text, 2000);
    expect(chunks.length).toBeGreaterThan(2);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(2000);
      expect(fencesBalanced(c)).toBe(true);
    }
    const codeChunks = chunks.filter((c) => c.includes("const x"));
    for (const c of codeChunks) expect(c).toMatch(/```ts\n/);
    const lines = chunks.join("\n").split("\n").filter((l) => l.startsWith("const x"));
    expect(lines).toHaveLength(300);
  });

  it("a 5,000-character answer fits Discord's 2,000 limit in three or more pieces, losing nothing", () => {
    const words = Array.from({ length: 900 }, (_, i) => `word${i}`).join(" ");
    const chunks = splitMessage(words, 2000);
    expect(words.length).toBeGreaterThan(5000);
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(2000);
    expect(chunks.join(" ").split(" ")).toHaveLength(900);
  });

  it("closes an unclosed fence", () => {
    const chunks = splitMessage(`\`\`\`\n${"x\n".repeat(200)}`, 100);
    for (const c of chunks) expect(fencesBalanced(c)).toBe(true);
  });
});
