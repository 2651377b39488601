import { createJiti, type Jiti } from "jiti";
import { type FSWatcher, watch as fsWatch } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import * as typebox from "typebox";
import * as typeboxCompile from "typebox/compile";
import * as typeboxValue from "typebox/value";
import * as contract from "./tool-contract.js";
import * as settings from "./integration-settings.js";
import type { CustomToolApi, MomTool } from "./tool-contract.js";
import { ToolProbe } from "./probe-tool.js";
import { errorMessage, toolContractErrors } from "./tool-schema.js";

/** A file that did not give a usable tool, and why. */
export interface ToolProblem {
  path: string;
  error: string;
}

/** Where `invoke_tool` and the prompt get custom tools from; the registry is one. */
export interface ToolSource {
  tools(): MomTool[];
  get(id: string): MomTool | undefined;
}

/** Structurally a subset of pino's logger. */
export interface ToolsLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export interface CustomToolRegistryOptions {
  /** Quiet time after the last file event before reloading. Default 200 ms. */
  debounceMs?: number;
  /** How often watch() also compares the dirs' file list, sizes and mtimes (a fallback for missed or unsupported fs events). 0 disables it. Default 2000 ms. */
  pollIntervalMs?: number;
  /** A tool whose import or factory takes longer than this is reported and skipped. Default 10 s. */
  loadTimeoutMs?: number;
  logger?: ToolsLogger;
  /**
   * Asked before a tool directory is loaded (or probed): a reason not to load it, or undefined.
   * The runner passes `requireApproval` so workspace tools need an admin's approval.
   */
  admit?: (toolDir: string) => Promise<string | undefined>;
  /** Files besides the dirs whose change reloads the tools (e.g. the approvals file). */
  watchFiles?: string[];
}

/** Entry files looked for in each `<dir>/<name>/`, in this order. */
export const TOOL_ENTRY_FILES = ["index.ts", "index.mts", "index.js", "index.mjs"];

/**
 * Modules custom tools can import without a node_modules of their own: the host's TypeBox (so
 * schemas are built by the same TypeBox that validates them) and `@mom/tools`' constants.
 * Type-only imports (`import type { MomTool } from "@mom/tools"`) are erased anyway.
 */
export const VIRTUAL_MODULES: Record<string, unknown> = {
  typebox,
  "typebox/compile": typeboxCompile,
  "typebox/value": typeboxValue,
  "@sinclair/typebox": typebox,
  "@sinclair/typebox/compile": typeboxCompile,
  "@sinclair/typebox/value": typeboxValue,
  "@mom/tools": { ...contract, ...settings },
};

interface Loaded {
  tool: MomTool;
  path: string;
}

/**
 * Custom host tools from `<dir>/<name>/index.ts` (or .mts/.js/.mjs) for each dir, later dirs
 * overriding earlier ones (pass the global tools dir first, then workspace/tools). A file that
 * fails to load is a problem, not an exception: the other tools still load. Each reload imports
 * every file afresh (jiti without module or fs cache), so edits take effect without a restart.
 */
export class CustomToolRegistry implements ToolSource {
  readonly dirs: string[];
  private byId = new Map<string, Loaded>();
  private currentProblems: ToolProblem[] = [];
  private readonly debounceMs: number;
  private readonly pollIntervalMs: number;
  private readonly loadTimeoutMs: number;
  private readonly logger?: ToolsLogger;
  private running?: Promise<void>;
  private queued?: Promise<void>;
  private watching = false;
  private onChange?: (registry: CustomToolRegistry) => void;
  private watchers = new Map<string, FSWatcher>();
  private pollTimer?: NodeJS.Timeout;
  private debounceTimer?: NodeJS.Timeout;
  private lastSignature?: string;
  private polling = false;
  private readonly probe: ToolProbe;
  private readonly admit?: (toolDir: string) => Promise<string | undefined>;
  private readonly watchFiles: string[];

  constructor(
    dirs: string[],
    private readonly api: CustomToolApi,
    opts: CustomToolRegistryOptions = {},
  ) {
    this.dirs = dirs.map((d) => resolve(d));
    this.debounceMs = opts.debounceMs ?? 200;
    this.pollIntervalMs = opts.pollIntervalMs ?? 2000;
    this.loadTimeoutMs = opts.loadTimeoutMs ?? 10_000;
    this.logger = opts.logger;
    this.admit = opts.admit;
    this.watchFiles = (opts.watchFiles ?? []).map((f) => resolve(f));
    this.probe = new ToolProbe({ dataDir: api.dataDir, workspaceDir: api.workspaceDir });
  }

  /** The loaded tools, sorted by id. */
  tools(): MomTool[] {
    return [...this.byId.values()].map((l) => l.tool).sort((a, b) => a.id.localeCompare(b.id));
  }

  get(id: string): MomTool | undefined {
    return this.byId.get(id)?.tool;
  }

  /** The file a tool was loaded from. */
  sourceOf(id: string): string | undefined {
    return this.byId.get(id)?.path;
  }

  /** Files of the last (re)load that gave no tool, or whose tool was overridden by a later dir. */
  problems(): ToolProblem[] {
    return this.currentProblems.map((p) => ({ ...p }));
  }

  /**
   * Loads every tool again and swaps the result in at once (calls never see a half-loaded set).
   * Concurrent calls are coalesced: at most one reload runs and one more waits behind it.
   */
  reload(): Promise<void> {
    if (!this.running) {
      this.running = this.loadAll().finally(() => {
        this.running = undefined;
      });
      return this.running;
    }
    if (!this.queued) {
      this.queued = this.running.catch(() => undefined).then(() => {
        this.queued = undefined;
        return this.reload();
      });
    }
    return this.queued;
  }

  /**
   * Reloads when a file under the dirs is added, changed or deleted (debounced), then calls
   * `onChange`. Uses fs.watch where the platform supports it, and a periodic comparison of the
   * dirs' files as a fallback; dirs that do not exist yet are picked up when they appear.
   */
  watch(onChange?: (registry: CustomToolRegistry) => void): void {
    this.onChange = onChange;
    if (this.watching) return;
    this.watching = true;
    this.attachWatchers();
    if (this.pollIntervalMs > 0) {
      void this.signature().then((sig) => {
        this.lastSignature ??= sig;
      });
      this.pollTimer = setInterval(() => void this.poll(), this.pollIntervalMs);
      this.pollTimer.unref();
    }
  }

  /** Stops watching. Loaded tools stay available. */
  close(): void {
    this.watching = false;
    this.probe.stop();
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.debounceTimer) clearTimeout(this.debounceTimer);
    this.pollTimer = this.debounceTimer = undefined;
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }

  private async loadAll(): Promise<void> {
    // Taken before the files are read (also before watch() starts): a file written while they load
    // then differs from it at the next poll.
    if (this.pollIntervalMs > 0) this.lastSignature = await this.signature();
    const jiti = createJiti(import.meta.url, {
      moduleCache: false,
      fsCache: false,
      tryNative: false,
      interopDefault: false,
      virtualModules: VIRTUAL_MODULES,
    });
    const byId = new Map<string, Loaded>();
    const problems: ToolProblem[] = [];
    for (const dir of this.dirs) {
      for (const found of await this.scan(dir, problems)) {
        const refused = await this.admit?.(dirname(found));
        if (refused) {
          problems.push({ path: found, error: refused });
          continue;
        }
        const result = await this.loadFile(jiti, found);
        if ("error" in result) {
          problems.push({ path: found, error: result.error });
          continue;
        }
        for (const tool of result.tools) {
          const previous = byId.get(tool.id);
          if (previous) {
            problems.push({ path: previous.path, error: `tool id ${tool.id} is overridden by ${found}` });
          }
          byId.set(tool.id, { tool, path: found });
        }
      }
    }
    this.byId = byId;
    this.currentProblems = problems;
    for (const p of problems) this.logger?.warn({ path: p.path, error: p.error }, "custom tool problem");
    this.logger?.info({ tools: [...byId.keys()].sort(), problems: problems.length }, "custom tools loaded");
    if (this.watching) this.attachWatchers();
  }

  /** The entry files in `dir`, one per tool directory, sorted by directory name. */
  private async scan(dir: string, problems: ToolProblem[]): Promise<string[]> {
    let names: string[];
    try {
      names = (await readdir(dir)).sort();
    } catch (e) {
      const code = (e as { code?: string }).code;
      // A watcher on a deleted dir watches nothing; drop it so the dir is watched again once it is back.
      this.watchers.get(dir)?.close();
      this.watchers.delete(dir);
      if (code !== "ENOENT") problems.push({ path: dir, error: `cannot read tools directory: ${errorMessage(e)}` });
      return [];
    }
    const files: string[] = [];
    for (const name of names) {
      if (name.startsWith(".") || name.startsWith("_") || name === "node_modules") continue;
      const toolDir = join(dir, name);
      if (!(await isDirectory(toolDir))) continue;
      let entry: string | undefined;
      for (const candidate of TOOL_ENTRY_FILES) {
        if (await isFile(join(toolDir, candidate))) {
          entry = join(toolDir, candidate);
          break;
        }
      }
      if (entry) files.push(entry);
      else problems.push({ path: toolDir, error: `no ${TOOL_ENTRY_FILES.join(", ")} (directories starting with _ are ignored)` });
    }
    return files;
  }

  private async loadFile(jiti: Jiti, path: string): Promise<{ tools: MomTool[] } | { error: string }> {
    // A loop or process.exit while loading must cost a worker, never the runner.
    const problem = await this.probe.check(path, this.loadTimeoutMs);
    if (problem) return { error: problem };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`loading took longer than ${this.loadTimeoutMs} ms`)), this.loadTimeoutMs);
    });
    try {
      return await Promise.race([this.instantiate(jiti, path), timeout]);
    } catch (e) {
      return { error: errorMessage(e).slice(0, 2000) };
    } finally {
      clearTimeout(timer);
    }
  }

  private async instantiate(jiti: Jiti, path: string): Promise<{ tools: MomTool[] } | { error: string }> {
    const mod = (await jiti.import(path)) as Record<string, unknown> | ((...a: unknown[]) => unknown) | undefined;
    const exported = pickExport(mod);
    if (exported === undefined) {
      return { error: "no tool exported: export default a tool, a list of tools or a factory (api) => tool(s), or export const tool = ..." };
    }
    let candidate: unknown = exported;
    if (typeof exported === "function") {
      try {
        candidate = await (exported as (api: CustomToolApi) => unknown)(this.api);
      } catch (e) {
        return { error: `factory threw: ${errorMessage(e)}` };
      }
    }
    // An integration exports its tools together (one client, one set of settings).
    const candidates = Array.isArray(candidate) ? candidate : [candidate];
    if (!candidates.length) return { error: "the tool list is empty" };
    const errors = candidates.flatMap((c, i) => {
      const found = toolContractErrors(c);
      const id = (c as { id?: unknown } | null)?.id;
      return Array.isArray(candidate) && found.length ? [`tool ${typeof id === "string" ? id : `#${i + 1}`}: ${found.join("; ")}`] : found;
    });
    if (errors.length) return { error: errors.join("; ") };
    const ids = candidates.map((c) => (c as MomTool).id);
    const twice = ids.find((id, i) => ids.indexOf(id) !== i);
    if (twice) return { error: `tool id ${twice} is exported twice` };
    return { tools: candidates as MomTool[] };
  }

  private schedule(): void {
    if (!this.watching) return;
    if (this.debounceTimer) clearTimeout(this.debounceTimer);
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = undefined;
      void this.reload()
        .then(() => {
          if (this.watching) this.onChange?.(this);
        })
        .catch((e) => this.logger?.warn({ error: errorMessage(e) }, "custom tools reload failed"));
    }, this.debounceMs);
    this.debounceTimer.unref();
  }

  private attachWatchers(): void {
    for (const dir of this.dirs) {
      if (this.watchers.has(dir)) continue;
      try {
        const w = fsWatch(dir, { recursive: true }, () => this.schedule());
        w.on("error", () => {
          // The dir went away or the platform gave up: the poll notices the rest.
          w.close();
          this.watchers.delete(dir);
          this.schedule();
        });
        w.unref();
        this.watchers.set(dir, w);
      } catch {
        // Missing dir, or no recursive watch here: polling covers it.
      }
    }
  }

  private async poll(): Promise<void> {
    if (this.polling || !this.watching) return;
    this.polling = true;
    try {
      const sig = await this.signature();
      if (this.lastSignature !== undefined && sig !== this.lastSignature) this.schedule();
      this.lastSignature = sig;
    } finally {
      this.polling = false;
    }
  }

  /** Paths, sizes and mtimes of the files under the dirs (a few levels deep, node_modules skipped). */
  private async signature(): Promise<string> {
    const parts: string[] = [];
    const walk = async (dir: string, depth: number) => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch {
        parts.push(`${dir}:missing`);
        return;
      }
      for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
        if (e.name === "node_modules" || e.name.startsWith(".")) continue;
        const p = join(dir, e.name);
        if (e.isDirectory()) {
          if (depth < 4) await walk(p, depth + 1);
        } else {
          try {
            const s = await stat(p);
            parts.push(`${p}:${s.size}:${s.mtimeMs}`);
          } catch {
            // Deleted while walking; the next poll sees it.
          }
        }
        if (parts.length > 5000) return;
      }
    };
    for (const dir of this.dirs) await walk(dir, 0);
    for (const f of this.watchFiles) {
      const s = await stat(f).catch(() => undefined);
      parts.push(`${f}:${s ? `${s.size}:${s.mtimeMs}` : "missing"}`);
    }
    return parts.join("\n");
  }
}

/** Loads the custom tools in `dirs` (later dirs override earlier ones). Never throws for a bad tool: see problems(). */
export async function loadCustomTools(dirs: string[], api: CustomToolApi, opts?: CustomToolRegistryOptions): Promise<CustomToolRegistry> {
  const registry = new CustomToolRegistry(dirs, api, opts);
  await registry.reload();
  return registry;
}

/** A view of `source` with only the tools `keep` accepts (e.g. what policy lets a channel see). */
export function filterToolSource(source: ToolSource, keep: (tool: MomTool) => boolean): ToolSource {
  return {
    tools: () => source.tools().filter(keep),
    get: (id) => {
      const tool = source.get(id);
      return tool && keep(tool) ? tool : undefined;
    },
  };
}

function pickExport(mod: unknown): unknown {
  if (mod === undefined || mod === null) return undefined;
  if (typeof mod === "function") return mod; // CommonJS `module.exports = factory`
  const m = mod as Record<string, unknown>;
  if (m.default !== undefined && m.default !== null) return m.default;
  if (m.tool !== undefined && m.tool !== null) return m.tool;
  if (typeof m.id === "string" && typeof m.execute === "function") return m; // CommonJS `module.exports = tool`
  return undefined;
}

async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isDirectory();
  } catch {
    return false;
  }
}

async function isFile(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}
