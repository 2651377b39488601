import { afterEach, describe, expect, it } from "@jest/globals";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { approveTool, readToolApprovals, reviewWorkspaceTools, TOOL_APPROVED_COPIES_DIR, toolDigest } from "./tool-approvals.js";

let root: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

function setup() {
  root = mkdtempSync(join(tmpdir(), "mom-tool-approvals-"));
  const tools = join(root, "workspace/tools");
  const file = join(root, "tool-approvals.json");
  const write = (rel: string, text: string | Buffer) => {
    mkdirSync(join(tools, rel, ".."), { recursive: true });
    writeFileSync(join(tools, rel), text);
  };
  return { tools, file, write };
}

describe("workspace tool approvals", () => {
  it("digest: every file's path, size and bytes in order, as approvals made before copies were kept", async () => {
    const { tools, write } = setup();
    write("greet/index.ts", "export default {};\n");
    const data = readFileSync(join(tools, "greet/index.ts"));
    const expected = createHash("sha256").update(`greet/index.ts\0${data.length}\0`).update(data).digest("hex");
    expect(await toolDigest(join(tools, "greet"))).toEqual({ sha256: expected, files: ["greet/index.ts"] });
  });

  it("approving keeps a copy (0600) and who approved; a change shows as a diff against it, a new tool as all added", async () => {
    const { tools, file, write } = setup();
    write("greet/index.ts", 'export const greeting = "Hello";\n');
    write("greet/data.bin", Buffer.from([0, 1, 2]));
    write("greet/node_modules/dep/index.js", "module.exports = 1;\n");
    write("other/index.ts", "export default 1;\n");
    const d = await approveTool(file, join(tools, "greet"), { by: "alice (console)", now: new Date("2026-11-27T10:00:00Z") });
    expect(readToolApprovals(file).greet).toEqual({ sha256: d.sha256, approvedAt: "2026-11-27T10:00:00.000Z", approvedBy: "alice (console)" });
    expect(statSync(join(root, TOOL_APPROVED_COPIES_DIR, "greet.json")).mode & 0o777).toBe(0o600);

    write("greet/index.ts", 'export const greeting = "Servus";\n');
    write("greet/data.bin", Buffer.from([0, 1, 3]));
    write("greet/node_modules/dep/index.js", "module.exports = 2;\n");
    write("greet/extra.ts", "export const x = 1;\n");
    const review = await reviewWorkspaceTools(file, tools);
    expect(review.map((t) => [t.name, t.state])).toEqual([
      ["greet", "changed"],
      ["other", "new"],
    ]);
    const greet = review[0]!;
    expect(greet.approved).toEqual({ sha256: d.sha256, approvedAt: "2026-11-27T10:00:00.000Z", approvedBy: "alice (console)" });
    expect(greet.copyKept).toBe(true);
    const byPath = Object.fromEntries(greet.changes.map((c) => [c.path, c]));
    expect(Object.keys(byPath)).toEqual(["greet/data.bin", "greet/extra.ts", "greet/index.ts", "greet/node_modules/dep/index.js"]);
    expect(byPath["greet/index.ts"]!.change).toBe("changed");
    expect(byPath["greet/index.ts"]!.diff).toContain('-export const greeting = "Hello";\n+export const greeting = "Servus";');
    expect(byPath["greet/index.ts"]!.diff).not.toContain("====");
    expect(byPath["greet/extra.ts"]).toMatchObject({ change: "added", diff: expect.stringContaining("+export const x = 1;") });
    expect(byPath["greet/data.bin"]).toEqual({ path: "greet/data.bin", change: "changed", note: expect.stringMatching(/^not shown \(binary.*: 3 bytes → 3 bytes$/) });
    expect(byPath["greet/node_modules/dep/index.js"]!.diff).toBeUndefined();
    expect(review[1]!.changes).toEqual([{ path: "other/index.ts", change: "added", diff: expect.stringContaining("+export default 1;") }]);

    // Removed files are named; an approval is bound to the digest that was reviewed.
    unlinkSync(join(tools, "greet/extra.ts"));
    await expect(approveTool(file, join(tools, "greet"), { expectSha256: greet.sha256, by: "bob (console)" })).rejects.toThrow(/^greet changed since it was reviewed \(sha256 [0-9a-f]{12} reviewed, [0-9a-f]{12} now\): review it again$/);
    expect(readToolApprovals(file).greet!.approvedBy).toBe("alice (console)");
    const now = (await reviewWorkspaceTools(file, tools))[0]!;
    expect(now.changes.find((c) => c.path === "greet/extra.ts")).toBeUndefined();
    await approveTool(file, join(tools, "greet"), { expectSha256: now.sha256, by: "bob (console)" });
    expect((await reviewWorkspaceTools(file, tools))[0]).toMatchObject({ state: "approved", changes: [] });
  });

  it("a tool approved before copies were kept shows its files as they are now, and says so", async () => {
    const { tools, file, write } = setup();
    write("greet/index.ts", "export default 1;\n");
    writeFileSync(file, JSON.stringify({ approvals: { greet: { sha256: "0".repeat(64), approvedAt: "2026-01-01T00:00:00.000Z" } } }));
    const [greet] = await reviewWorkspaceTools(file, tools);
    expect(greet).toMatchObject({ state: "changed", copyKept: false });
    expect(greet!.changes).toEqual([{ path: "greet/index.ts", change: "changed", note: "no copy of the approved version was kept: the file as it is now", diff: expect.stringContaining("+export default 1;") }]);
  });
});
