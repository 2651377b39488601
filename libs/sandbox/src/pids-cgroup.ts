import { randomUUID } from "node:crypto";
import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import { mkdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** One command's cgroups (one per hierarchy: pids and memory are separate trees under cgroup v1). */
export interface CommandCgroup {
  /** Writing a pid into each of these moves that process (and its future children) in. */
  readonly procsFiles: readonly string[];
  /** Every process of the command, as the kernel counts them (from the first cgroup). */
  pids(): Promise<number[]>;
  /** Whether a memory limit is among them. */
  readonly limitsMemory: boolean;
  /** How many processes the kernel's OOM killer killed in the memory cgroup so far. */
  oomKills(): Promise<number>;
  remove(): Promise<void>;
}

export type Controller = "pids" | "memory";

/** Where the limits of a command's cgroups are made: a v1 hierarchy's directory, or a v2 one. */
export interface CgroupBase {
  dir: string;
  version: 1 | 2;
}

/**
 * Where this process may create child cgroups of `controller` (a cgroup v1 hierarchy of that
 * controller, or a cgroup v2 directory that delegates it), or undefined. Found once per call.
 */
export function controllerCgroupBase(controller: Controller): CgroupBase | undefined {
  try {
    const lines = readFileSync("/proc/self/cgroup", "utf8").split("\n");
    const v1 = lines.find((l) => l.split(":")[1]?.split(",").includes(controller));
    if (v1) {
      const dir = join("/sys/fs/cgroup", controller, v1.split(":")[2] ?? "/");
      accessSync(dir, constants.W_OK);
      return { dir, version: 1 };
    }
    // cgroup v2: mounted at /sys/fs/cgroup (unified) or /sys/fs/cgroup/unified (hybrid).
    const path = lines.find((l) => l.startsWith("0::"))?.slice(3);
    if (path === undefined) return undefined;
    for (const mount of ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]) {
      const dir = join(mount, path);
      if (!existsSync(join(dir, "cgroup.subtree_control"))) continue;
      if (!readFileSync(join(dir, "cgroup.subtree_control"), "utf8").split(/\s+/).includes(controller)) continue;
      accessSync(dir, constants.W_OK);
      return { dir, version: 2 };
    }
  } catch {
    // no cgroups we may write
  }
  return undefined;
}

/** The pids base directory (kept for callers that only need to know whether a process limit works). */
export function pidsCgroupBase(): string | undefined {
  return controllerCgroupBase("pids")?.dir;
}

export interface CgroupLimits {
  pids?: { base: CgroupBase; maxProcesses: number };
  memory?: { base: CgroupBase; maxBytes: number };
}

async function makeOne(base: CgroupBase, files: Array<[string, string]>): Promise<string> {
  const dir = join(base.dir, `mom-${randomUUID()}`);
  await mkdir(dir);
  try {
    for (const [name, value] of files) {
      // memsw / swap files exist only with swap accounting: skip them where absent.
      if (name.includes("memsw") || name.includes("swap")) {
        if (!existsSync(join(dir, name))) continue;
      }
      await writeFile(join(dir, name), value);
    }
  } catch (err) {
    await rmdir(dir).catch(() => {});
    throw err;
  }
  return dir;
}

async function removeDir(dir: string): Promise<void> {
  // The kernel refuses while a (dying) process is still inside: try for a moment.
  for (let i = 0; i < 200; i++) {
    try {
      await rmdir(dir);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

/** A cgroup per limit for one command; the directories of both live side by side when v1 splits them. */
export async function createCommandCgroup(limits: CgroupLimits): Promise<CommandCgroup> {
  const dirs: string[] = [];
  let memoryDir: CgroupBase | undefined;
  const pidsBase = limits.pids?.base;
  const memBase = limits.memory?.base;
  try {
    if (limits.pids && limits.memory && pidsBase!.dir === memBase!.dir) {
      // cgroup v2 with both delegated: one directory holds both limits.
      const dir = await makeOne(pidsBase!, [
        ["pids.max", String(limits.pids.maxProcesses)],
        ["memory.max", String(limits.memory.maxBytes)],
        ["memory.swap.max", "0"],
      ]);
      dirs.push(dir);
      memoryDir = { dir, version: 2 };
    } else {
      if (limits.pids) dirs.push(await makeOne(limits.pids.base, [["pids.max", String(limits.pids.maxProcesses)]]));
      if (limits.memory) {
        const b = limits.memory.base;
        const v = String(limits.memory.maxBytes);
        const dir = await makeOne(b, b.version === 1 ? [["memory.limit_in_bytes", v], ["memory.memsw.limit_in_bytes", v]] : [["memory.max", v], ["memory.swap.max", "0"]]);
        dirs.push(dir);
        memoryDir = { dir, version: b.version };
      }
    }
  } catch (err) {
    await Promise.all(dirs.map(removeDir));
    throw err;
  }
  const procsFiles = dirs.map((d) => join(d, "cgroup.procs"));
  return {
    procsFiles,
    limitsMemory: memoryDir !== undefined,
    pids: async () =>
      (await readFile(procsFiles[0]!, "utf8").catch(() => ""))
        .split("\n")
        .filter(Boolean)
        .map(Number),
    oomKills: async () => {
      if (!memoryDir) return 0;
      const text = await readFile(join(memoryDir.dir, memoryDir.version === 1 ? "memory.oom_control" : "memory.events"), "utf8").catch(() => "");
      return Number(/^oom_kill (\d+)/m.exec(text)?.[1] ?? 0);
    },
    remove: async () => {
      await Promise.all(dirs.map(removeDir));
    },
  };
}
