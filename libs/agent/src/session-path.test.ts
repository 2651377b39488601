import { describe, expect, it } from "@jest/globals";
import { SessionManager } from "@mariozechner/pi-coding-agent";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fenceSessionWrites, linearGetBranch } from "./session-path.js";

describe("linearGetBranch", () => {
  it("returns what pi's getBranch returns, for the leaf, an inner entry and after branching", () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-branch-"));
    const sm = SessionManager.open(join(dir, "context.jsonl"), dir, dir);
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(sm.appendMessage({ role: "user", content: [{ type: "text", text: `m${i}` }], timestamp: i }));
    sm.branch(ids[20]!);
    sm.appendMessage({ role: "user", content: [{ type: "text", text: "other branch" }], timestamp: 99 });
    const original = sm.getBranch.bind(sm);
    const expected = [original(), original(ids[10]), original(ids[49])];
    linearGetBranch(sm);
    expect([sm.getBranch(), sm.getBranch(ids[10]), sm.getBranch(ids[49])]).toEqual(expected);
    expect(sm.getBranch().map((e) => e.id).slice(0, 21)).toEqual(ids.slice(0, 21));
  });
});

describe("fenceSessionWrites", () => {
  it("lets pi write context.jsonl only while the guard allows it", () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-fence-"));
    const file = join(dir, "context.jsonl");
    const sm = SessionManager.create(dir, dir);
    sm.setSessionFile(file);
    let fenced = false;
    fenceSessionWrites(sm, () => {
      if (fenced) throw new Error("channel now belongs to another runner");
    });
    sm.appendMessage({ role: "user", content: [{ type: "text", text: "q1" }], timestamp: 1 });
    sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "a1" }], timestamp: 2 } as never);
    const written = readFileSync(file, "utf8");
    expect(written).toContain("a1");
    fenced = true;
    expect(() => sm.appendMessage({ role: "user", content: [{ type: "text", text: "q2 from a fenced runner" }], timestamp: 3 })).toThrow(/another runner/);
    expect(readFileSync(file, "utf8")).toBe(written);
    expect(existsSync(file)).toBe(true);
  });
});
