import { afterEach, describe, expect, it } from "@jest/globals";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CustomToolRegistry, loadCustomTools } from "./custom-tools.js";
import { createHostToolApi } from "./host-api.js";
import { createInvokeTool } from "./invoke-tool.js";
import { formatCustomToolsForPrompt } from "./prompt.js";
import { runWithTimeout } from "./timeout.js";
import type { GateCall, ToolGate } from "./tool-contract.js";

const EXAMPLES = fileURLToPath(new URL("../../../examples/tools", import.meta.url));

const roots: string[] = [];
const registries: CustomToolRegistry[] = [];
afterEach(() => {
  for (const r of registries.splice(0)) r.close();
  for (const d of roots.splice(0)) rmSync(d, { recursive: true, force: true });
});

const gate = (calls: GateCall[]): ToolGate => ({
  run: (call, signal, fn) => {
    calls.push(call);
    return runWithTimeout(fn, { toolId: call.toolId, timeoutMs: call.timeoutMs, signal });
  },
});

/** data/workspace with a channel dir holding a `results` folder, and the example installed in workspace/tools. */
async function installed() {
  const data = mkdtempSync(join(tmpdir(), "mom-example-"));
  roots.push(data);
  const ws = join(data, "workspace");
  const cwd = join(ws, "channels", "cli", "general");
  mkdirSync(join(cwd, "results", "deep"), { recursive: true });
  writeFileSync(join(cwd, "results", "a.txt"), "alpha");
  writeFileSync(join(cwd, "results", "deep", "b.txt"), "beta");
  writeFileSync(join(cwd, "results", "noise.log"), "noise");
  // Installed the way the README says: copy the directory into workspace/tools/.
  cpSync(join(EXAMPLES, "archive"), join(ws, "tools", "archive"), { recursive: true });
  const api = createHostToolApi({ dataDir: data, workspaceDir: ws });
  const registry = await loadCustomTools([join(data, "global-tools"), join(ws, "tools")], api);
  registries.push(registry);
  const calls: GateCall[] = [];
  const invoke = createInvokeTool(registry, gate(calls), { channel: "cli/general", cwd });
  const call = (args: unknown) => invoke.execute("call", { tool: "files.archive.create", args: args as Record<string, unknown> }, undefined, undefined, undefined as never);
  return { ws, cwd, registry, calls, call };
}

const listing = (file: string) => execFileSync("tar", ["-tzf", file], { encoding: "utf8" }).split("\n").filter(Boolean).sort();

describe("examples/tools/archive (files.archive.create)", () => {
  it("loads straight from the examples dir", async () => {
    const registry = await loadCustomTools([EXAMPLES], createHostToolApi({ dataDir: tmpdir(), workspaceDir: tmpdir() }));
    registries.push(registry);
    expect(registry.problems()).toEqual([]);
    expect(registry.tools().map((t) => [t.id, t.risk])).toEqual([["files.archive.create", "write"]]);
    expect(formatCustomToolsForPrompt(registry.tools())).toContain("- files.archive.create (risk: write)");
  });

  it("packs a channel directory through invoke_tool, honouring excludes", async () => {
    const { cwd, calls, call } = await installed();
    const result = await call({ dir: "results", out: "out/results.tar.gz", exclude: ["*.log"] });
    expect((result.content[0] as { text: string }).text).toMatch(/^Created out\/results\.tar\.gz \(4 entries, \d+ B\) from results\.$/);
    expect(listing(join(cwd, "out/results.tar.gz"))).toEqual(["results/", "results/a.txt", "results/deep/", "results/deep/b.txt"]);
    expect(calls[0]).toMatchObject({ toolId: "files.archive.create", risk: "write", timeoutMs: 300_000, args: { dir: "results", overwrite: false } });
    expect(existsSync(join(cwd, "out/results.tar.gz.partial"))).toBe(false);
  });

  it("names the archive after the directory by default and refuses to overwrite unless asked", async () => {
    const { cwd, call } = await installed();
    const first = await call({ dir: "results" });
    const name = /^Created (results-\d{8}-\d{6}\.tar\.gz) /.exec((first.content[0] as { text: string }).text)?.[1];
    expect(name).toBeDefined();
    expect(listing(join(cwd, name!))).toContain("results/noise.log");
    await expect(call({ dir: "results", out: name })).rejects.toThrow(`${name} already exists; pass overwrite: true`);
    await expect(call({ dir: "results", out: name, overwrite: "true" })).resolves.toBeDefined();
  });

  it("refuses paths outside the workspace and archives inside the packed directory", async () => {
    const { call } = await installed();
    await expect(call({ dir: "../../../.." })).rejects.toThrow("outside the workspace");
    await expect(call({ dir: "results", out: "../../../../../x.tar.gz" })).rejects.toThrow("outside the workspace");
    await expect(call({ dir: "results", out: "results/self.tar.gz" })).rejects.toThrow("cannot be inside the directory it packs");
    await expect(call({ dir: "missing" })).rejects.toThrow("missing does not exist");
    await expect(call({})).rejects.toThrow("dir: required (string)");
  });
});
