import { afterAll, describe, expect, it } from "@jest/globals";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sandbox } from "@mom/sandbox";
import { createMomTools } from "./labelled-tools.js";
import { mainThreadCpu } from "@mom/testing";

const roots: string[] = [];
afterAll(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

/** One channel in a real bubblewrap sandbox, and its edit tool as the runner builds it. */
function channel() {
  const root = mkdtempSync(join(tmpdir(), "mom-edit-work-"));
  roots.push(root);
  const workspaceDir = join(root, "workspace");
  const dir = join(workspaceDir, "channels", "cli", "a");
  mkdirSync(dir, { recursive: true });
  const sandbox = new Sandbox({ type: "bwrap" }, { dataDir: root, workspaceDir }).forChannel(dir);
  const edit = createMomTools(sandbox, join(dir, "scratch")).find((t) => t.name === "edit")!;
  const run = (path: string, edits: { oldText: string; newText: string }[]) =>
    edit.execute("call-1", { label: "change", path, edits }, undefined, undefined, undefined as never).catch((err: Error) => err);
  return { dir, sandbox, run };
}

describe("edit", () => {
  // pi's edit goes over the whole file once per edit (a Unicode normalisation of all of it to
  // count the matches), then diffs the whole file, synchronously on the runner's event loop,
  // which serves every channel. A 2 MB file a command wrote and 100 one-line edits (a few KB the
  // model writes) held that loop for seconds; a 16 MB file, for minutes.
  it("refuses an edit call that would go over a big file once per edit, before it reads the file", async () => {
    const c = channel();
    const made = await c.sandbox.executor.exec({ command: "seq 1 300000 > numbers.txt", onData: () => {} });
    expect(made.exitCode).toBe(0);
    const edits = Array.from({ length: 100 }, (_, i) => ({ oldText: `\n${i * 2000 + 7}\n`, newText: `\n#${i}\n` }));
    const { result, cpuMs } = await mainThreadCpu(() => c.run("numbers.txt", edits));
    expect(result).toBeInstanceOf(Error);
    expect((result as Error).message).toBe(
      "numbers.txt: too large for 100 edits in one call (1.9 MB; the edit tool goes over the whole file once per edit, so 100 edits may take a file of at most 41 KB, one edit 4 MB). Use apply_patch for many changes to a big file, or bash (sed).",
    );
    expect(cpuMs).toBeLessThan(1000);
    expect(readFileSync(join(c.dir, "numbers.txt"), "utf8").startsWith("1\n2\n3\n")).toBe(true);
  }, 60_000);

  it("still makes several edits in a file of usual size, and one in a file of a few MB", async () => {
    const c = channel();
    const made = await c.sandbox.executor.exec({ command: "printf 'one\\ntwo\\nthree\\n' > a.txt && { head -c 3145728 /dev/zero | tr '\\0' x; printf '\\nend\\n'; } > big.txt", onData: () => {} });
    expect(made.exitCode).toBe(0);
    const r = await c.run("a.txt", [
      { oldText: "one", newText: "ONE" },
      { oldText: "three", newText: "THREE" },
    ]);
    expect(r).not.toBeInstanceOf(Error);
    expect(readFileSync(join(c.dir, "a.txt"), "utf8")).toBe("ONE\ntwo\nTHREE\n");
    expect(await c.run("big.txt", [{ oldText: "end", newText: "END" }])).not.toBeInstanceOf(Error);
    expect(readFileSync(join(c.dir, "big.txt"), "utf8").endsWith("\nEND\n")).toBe(true);
    // One edit of a file over the bound is refused too, before it is read.
    expect(await c.sandbox.executor.exec({ command: "head -c 5000000 /dev/zero | tr '\\0' x > huge.txt", onData: () => {} })).toMatchObject({ exitCode: 0 });
    expect(((await c.run("huge.txt", [{ oldText: "xx", newText: "y" }])) as Error).message).toBe(
      "huge.txt: too large to edit (4.8 MB; the edit tool takes files of at most 4 MB). Use apply_patch or bash (sed).",
    );
  }, 60_000);
});
