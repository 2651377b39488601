import { afterEach, describe, expect, it } from "@jest/globals";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CustomToolRegistry, filterToolSource, loadCustomTools } from "./custom-tools.js";
import { createHostToolApi } from "./host-api.js";

const roots: string[] = [];
const registries: CustomToolRegistry[] = [];

afterEach(() => {
  for (const r of registries.splice(0)) r.close();
  for (const d of roots.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "mom-tools-"));
  roots.push(d);
  return d;
}

function writeTool(dir: string, name: string, source: string, file = "index.ts"): string {
  mkdirSync(join(dir, name), { recursive: true });
  const path = join(dir, name, file);
  writeFileSync(path, source);
  return path;
}

/** A valid tool module whose execute returns `reply`. */
function toolSource(id: string, reply: string, opts: { risk?: string; extra?: string } = {}): string {
  return `
import Type from "typebox";
import type { MomTool } from "@mom/tools";
const parameters = Type.Object({ n: Type.Number({ description: "a number" }) });
const tool: MomTool<typeof parameters> = {
  id: ${JSON.stringify(id)},
  description: "test tool ${id}",
  risk: ${JSON.stringify(opts.risk ?? "read")},
  parameters,
  ${opts.extra ?? ""}
  async execute(args) {
    return ${JSON.stringify(reply)} + ":" + args.n;
  },
};
export default tool;
`;
}

function setup(dirs: string[], opts: ConstructorParameters<typeof CustomToolRegistry>[2] = {}) {
  const ws = tempDir();
  const api = createHostToolApi({ dataDir: ws, workspaceDir: ws });
  const registry = new CustomToolRegistry(dirs, api, opts);
  registries.push(registry);
  return { registry, api, ws };
}

const ctx = () => ({ signal: new AbortController().signal, channel: "cli/test", cwd: tmpdir() });

async function waitFor(cond: () => boolean, what: string, ms = 8000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("CustomToolRegistry loading", () => {
  it("loads a default-exported tool, a factory and a named `tool` export", async () => {
    const dir = tempDir();
    writeTool(dir, "plain", toolSource("test.plain.run", "plain"));
    writeTool(
      dir,
      "factory",
      `
import Type from "typebox";
import { type CustomToolApi, DEFAULT_TOOL_TIMEOUT_MS } from "@mom/tools";
export default async (api: CustomToolApi) => ({
  id: "test.factory.where",
  timeoutMs: DEFAULT_TOOL_TIMEOUT_MS / 2,
  description: "says where the workspace is",
  risk: "read",
  parameters: Type.Object({}),
  execute: async () => ({ text: api.workspaceDir, details: { dataDir: api.dataDir } }),
});
`,
    );
    writeTool(
      dir,
      "named",
      `
const { Type } = require("typebox");
exports.tool = { id: "test.named.run", description: "cjs named export", risk: "write", parameters: Type.Object({}), execute: async () => "named" };
`,
      "index.js",
    );
    const { registry, ws } = setup([dir]);
    await registry.reload();

    expect(registry.problems()).toEqual([]);
    expect(registry.tools().map((t) => t.id)).toEqual(["test.factory.where", "test.named.run", "test.plain.run"]);
    expect(await registry.get("test.plain.run")!.execute({ n: 2 }, ctx())).toBe("plain:2");
    expect(await registry.get("test.factory.where")!.execute({}, ctx())).toEqual({ text: ws, details: { dataDir: ws } });
    expect(registry.get("test.factory.where")!.timeoutMs).toBe(60_000);
    expect(registry.get("test.named.run")!.risk).toBe("write");
    expect(registry.sourceOf("test.plain.run")).toBe(join(dir, "plain", "index.ts"));
  });

  it("loads an integration's tools exported together, and refuses a list with a bad or repeated tool", async () => {
    const dir = tempDir();
    writeTool(
      dir,
      "cal",
      `
import Type from "typebox";
import { integrationSettings, type CustomToolApi } from "@mom/tools";
const one = (id: string, risk: "read" | "write") => ({ id, description: id, risk, parameters: Type.Object({}), execute: async () => id });
export default (api: CustomToolApi) => [one("cal.event.list", "read"), one("cal.event.create", "write")];
`,
    );
    writeTool(dir, "bad", `import Type from "typebox";\nexport default [{ id: "bad.x.y", description: "d", risk: "read", parameters: Type.Object({}), execute: async () => "" }, { id: "bad.x.z" }];`);
    writeTool(dir, "twice", `import Type from "typebox";\nconst t = { id: "tw.x.y", description: "d", risk: "read", parameters: Type.Object({}), execute: async () => "" };\nexport default [t, t];`);
    const { registry } = setup([dir]);
    await registry.reload();
    expect(registry.tools().map((t) => t.id)).toEqual(["cal.event.create", "cal.event.list"]);
    const problems = Object.fromEntries(registry.problems().map((p) => [p.path.split("/").at(-2), p.error]));
    expect(problems.bad).toMatch(/^tool bad\.x\.z: /);
    expect(problems.twice).toBe("tool id tw.x.y is exported twice");
  });

  it("reports broken tools and still loads the good ones", async () => {
    const dir = tempDir();
    writeTool(dir, "good", toolSource("test.good.run", "good"));
    const syntax = writeTool(dir, "syntax", "export default { id: ");
    const throws = writeTool(dir, "throws", `throw new Error("boom at import");\nexport default {};`);
    const badId = writeTool(dir, "badid", toolSource("BadId", "x"));
    const noSchema = writeTool(
      dir,
      "noschema",
      `export default { id: "test.noschema.run", description: "d", risk: "read", execute: async () => "x" };`,
    );
    const badRisk = writeTool(dir, "badrisk", toolSource("test.badrisk.run", "x", { risk: "dangerous" }));
    const factoryThrows = writeTool(dir, "factorythrows", `export default () => { throw new Error("no token"); };`);
    const nothing = writeTool(dir, "nothing", `export const unrelated = 1;`);
    const missingImport = writeTool(dir, "missingimport", `import x from "no-such-package-anywhere";\nexport default x;`);
    mkdirSync(join(dir, "noindex"));
    mkdirSync(join(dir, "_shared"));
    writeFileSync(join(dir, "README.md"), "not a tool");

    const { registry } = setup([dir]);
    await registry.reload();

    expect(registry.tools().map((t) => t.id)).toEqual(["test.good.run"]);
    const problems = new Map(registry.problems().map((p) => [p.path, p.error]));
    expect(problems.get(syntax)).toMatch(/Unexpected|Syntax|Parse/i);
    expect(problems.get(throws)).toContain("boom at import");
    expect(problems.get(badId)).toContain("integration.resource.action");
    expect(problems.get(noSchema)).toContain("parameters must be a TypeBox object schema");
    expect(problems.get(badRisk)).toContain("risk \"dangerous\" must be one of read, write, destructive");
    expect(problems.get(factoryThrows)).toContain("factory threw: no token");
    expect(problems.get(nothing)).toContain("no tool exported");
    expect(problems.get(missingImport)).toContain("no-such-package-anywhere");
    expect(problems.get(join(dir, "noindex"))).toContain("no index.ts");
    expect(problems.has(join(dir, "_shared"))).toBe(false);
    expect(problems.size).toBe(9);
  });

  it("reports a tool whose loading hangs instead of waiting forever", async () => {
    const dir = tempDir();
    const hang = writeTool(dir, "hang", `export default () => new Promise(() => {});`);
    writeTool(dir, "good", toolSource("test.good.run", "good"));
    const { registry } = setup([dir], { loadTimeoutMs: 300 });
    await registry.reload();
    expect(registry.tools().map((t) => t.id)).toEqual(["test.good.run"]);
    expect(registry.problems()).toEqual([{ path: hang, error: "loading did not finish within 300 ms (a loop at import or in the factory?); not loaded" }]);
  });

  it("survives a tool that loops or calls process.exit while loading, and reports it", async () => {
    const dir = tempDir();
    const loop = writeTool(dir, "loop", `while (true) {}\nexport default {};`);
    const exitAtImport = writeTool(dir, "exit", `process.exit(3);\nexport default {};`);
    const exitInFactory = writeTool(dir, "exitf", `export default () => { process.exit(0); };`);
    const loopInFactory = writeTool(dir, "loopf", `export default () => { for (;;) {} };`);
    writeTool(dir, "good", toolSource("test.good.run", "good"));
    const { registry } = setup([dir], { loadTimeoutMs: 500 });
    await registry.reload();
    expect(registry.tools().map((t) => t.id)).toEqual(["test.good.run"]);
    const problems = new Map(registry.problems().map((p) => [p.path, p.error]));
    expect(problems.get(loop)).toMatch(/did not finish within 500 ms/);
    expect(problems.get(loopInFactory)).toMatch(/did not finish within 500 ms/);
    expect(problems.get(exitAtImport)).toBe("loading ended the process (exit code 3, e.g. process.exit at import); not loaded");
    expect(problems.get(exitInFactory)).toMatch(/loading ended the process \(exit code 0/);
  });

  it("lets a later dir override an earlier one and records the override", async () => {
    const global = tempDir();
    const workspace = tempDir();
    const shadowed = writeTool(global, "same", toolSource("test.same.run", "global"));
    writeTool(global, "onlyglobal", toolSource("test.global.run", "g"));
    const winner = writeTool(workspace, "same", toolSource("test.same.run", "workspace"));

    const registry = await loadCustomTools([global, join(workspace, "missing-is-fine"), workspace], createHostToolApi({ dataDir: global, workspaceDir: workspace }));
    registries.push(registry);

    expect(registry.tools().map((t) => t.id)).toEqual(["test.global.run", "test.same.run"]);
    expect(await registry.get("test.same.run")!.execute({ n: 1 }, ctx())).toBe("workspace:1");
    expect(registry.sourceOf("test.same.run")).toBe(winner);
    expect(registry.problems()).toEqual([{ path: shadowed, error: `tool id test.same.run is overridden by ${winner}` }]);
  });

  it("filterToolSource hides tools from lookups and listings", async () => {
    const dir = tempDir();
    writeTool(dir, "a", toolSource("test.a.run", "a"));
    writeTool(dir, "b", toolSource("test.b.run", "b", { risk: "destructive" }));
    const { registry } = setup([dir]);
    await registry.reload();
    const view = filterToolSource(registry, (t) => t.risk !== "destructive");
    expect(view.tools().map((t) => t.id)).toEqual(["test.a.run"]);
    expect(view.get("test.b.run")).toBeUndefined();
    expect(view.get("test.a.run")?.id).toBe("test.a.run");
  });
});

describe("CustomToolRegistry hot reload", () => {
  it("reload() re-reads changed files, drops deleted tools and picks up new ones", async () => {
    const dir = tempDir();
    writeTool(dir, "counter", toolSource("test.counter.run", "v1"));
    writeTool(dir, "helper", `import { label } from "./label.ts";\n${toolSource("test.helper.run", "x").replace('"x"', "label")}`);
    writeFileSync(join(dir, "helper", "label.ts"), `export const label = "one";`);
    const { registry } = setup([dir]);
    await registry.reload();
    expect(await registry.get("test.counter.run")!.execute({ n: 1 }, ctx())).toBe("v1:1");
    expect(await registry.get("test.helper.run")!.execute({ n: 1 }, ctx())).toBe("one:1");

    writeTool(dir, "counter", toolSource("test.counter.run", "v2"));
    writeFileSync(join(dir, "helper", "label.ts"), `export const label = "two";`);
    await registry.reload();
    expect(await registry.get("test.counter.run")!.execute({ n: 1 }, ctx())).toBe("v2:1");
    expect(await registry.get("test.helper.run")!.execute({ n: 1 }, ctx())).toBe("two:1");

    rmSync(join(dir, "counter"), { recursive: true });
    writeTool(dir, "fresh", toolSource("test.fresh.run", "new"));
    await registry.reload();
    expect(registry.tools().map((t) => t.id)).toEqual(["test.fresh.run", "test.helper.run"]);
  });

  it("a tool broken by an edit is reported, and fixed by the next edit", async () => {
    const dir = tempDir();
    const path = writeTool(dir, "t", toolSource("test.t.run", "ok"));
    const { registry } = setup([dir]);
    await registry.reload();
    writeFileSync(path, "export default {");
    await registry.reload();
    expect(registry.get("test.t.run")).toBeUndefined();
    expect(registry.problems().map((p) => p.path)).toEqual([path]);
    writeFileSync(path, toolSource("test.t.run", "fixed"));
    await registry.reload();
    expect(await registry.get("test.t.run")!.execute({ n: 3 }, ctx())).toBe("fixed:3");
    expect(registry.problems()).toEqual([]);
  });

  it("coalesces concurrent reloads", async () => {
    const dir = tempDir();
    writeTool(dir, "a", toolSource("test.a.run", "a"));
    const { registry } = setup([dir]);
    await Promise.all([registry.reload(), registry.reload(), registry.reload()]);
    expect(registry.tools().map((t) => t.id)).toEqual(["test.a.run"]);
  });

  it("watch() reloads on change, delete and add without restarting", async () => {
    const root = tempDir();
    const dir = join(root, "tools");
    mkdirSync(dir);
    const path = writeTool(dir, "w", toolSource("test.w.run", "before"));
    const { registry } = setup([dir], { debounceMs: 50, pollIntervalMs: 200 });
    await registry.reload();
    let changes = 0;
    registry.watch(() => changes++);

    writeFileSync(path, toolSource("test.w.run", "after"));
    await waitFor(() => changes > 0, "reload after change");
    await waitFor(() => registry.get("test.w.run") !== undefined, "tool present");
    expect(await registry.get("test.w.run")!.execute({ n: 1 }, ctx())).toBe("after:1");

    rmSync(join(dir, "w"), { recursive: true });
    await waitFor(() => registry.get("test.w.run") === undefined, "deleted tool gone");

    writeTool(dir, "added", toolSource("test.added.run", "added"));
    await waitFor(() => registry.get("test.added.run") !== undefined, "added tool");
    expect(await registry.get("test.added.run")!.execute({ n: 7 }, ctx())).toBe("added:7");
  });

  it("watch() notices a file written while the tools were first loaded (someone editing as the runner starts)", async () => {
    const dir = tempDir();
    const note = join(dir, "n", "notes.md");
    // Loading this tool writes a file beside it, once: a write that lands after its dir was read.
    writeTool(dir, "n", toolSource("test.n.run", "n").replace("export default tool;", `import { existsSync, writeFileSync } from "node:fs";\nif (!existsSync(${JSON.stringify(note)})) writeFileSync(${JSON.stringify(note)}, "edited");\nexport default tool;`));
    const { registry } = setup([dir], { debounceMs: 20, pollIntervalMs: 50 });
    await registry.reload();
    expect(existsSync(note)).toBe(true);
    let changes = 0;
    registry.watch(() => changes++);
    await waitFor(() => changes > 0, "a reload for the file written during the first load", 2000);
  });

  it("watch() picks up a tools dir that is created later (polling fallback)", async () => {
    const root = tempDir();
    const dir = join(root, "not-yet");
    const { registry } = setup([dir], { debounceMs: 50, pollIntervalMs: 100 });
    await registry.reload();
    expect(registry.tools()).toEqual([]);
    registry.watch();
    await new Promise((r) => setTimeout(r, 150));
    writeTool(dir, "late", toolSource("test.late.run", "late"));
    await waitFor(() => registry.get("test.late.run") !== undefined, "tool in late dir");
  });

  it("close() stops reloading", async () => {
    const dir = tempDir();
    const path = writeTool(dir, "c", toolSource("test.c.run", "one"));
    const { registry } = setup([dir], { debounceMs: 20, pollIntervalMs: 50 });
    await registry.reload();
    registry.watch();
    registry.close();
    writeFileSync(path, toolSource("test.c.run", "two"));
    await new Promise((r) => setTimeout(r, 400));
    expect(await registry.get("test.c.run")!.execute({ n: 0 }, ctx())).toBe("one:0");
  });
});
