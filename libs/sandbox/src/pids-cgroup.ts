import { randomUUID } from "node:crypto";
import { accessSync, constants, readFileSync } from "node:fs";
import { mkdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** One command's process-count cgroup: its processes are counted, capped and found by the kernel. */
export interface CommandCgroup {
  /** Writing a pid here moves that process (and its future children) in. */
  readonly procsFile: string;
  pids(): Promise<number[]>;
  remove(): Promise<void>;
}

/**
 * Where this process may create child cgroups of the `pids` controller (cgroup v1 `pids`
 * hierarchy, or a cgroup v2 directory that delegates `pids`), or undefined. Found once.
 */
export function pidsCgroupBase(): string | undefined {
  try {
    const lines = readFileSync("/proc/self/cgroup", "utf8").split("\n");
    const v1 = lines.find((l) => l.split(":")[1]?.split(",").includes("pids"));
    const candidates = v1
      ? [join("/sys/fs/cgroup/pids", v1.split(":")[2] ?? "/")]
      : lines.filter((l) => l.startsWith("0::")).map((l) => join("/sys/fs/cgroup", l.slice(3)));
    for (const dir of candidates) {
      if (!v1 && !readFileSync(join(dir, "cgroup.subtree_control"), "utf8").split(/\s+/).includes("pids")) continue;
      accessSync(dir, constants.W_OK);
      return dir;
    }
  } catch {
    // no cgroups we may write
  }
  return undefined;
}

export async function createCommandCgroup(base: string, maxProcesses: number): Promise<CommandCgroup> {
  const dir = join(base, `mom-${randomUUID()}`);
  await mkdir(dir);
  await writeFile(join(dir, "pids.max"), String(maxProcesses)).catch(async (err) => {
    await rmdir(dir).catch(() => {});
    throw err;
  });
  const procsFile = join(dir, "cgroup.procs");
  return {
    procsFile,
    pids: async () =>
      (await readFile(procsFile, "utf8").catch(() => ""))
        .split("\n")
        .filter(Boolean)
        .map(Number),
    // The kernel refuses while a (dying) process is still inside: try for a moment.
    remove: async () => {
      for (let i = 0; i < 200; i++) {
        try {
          await rmdir(dir);
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    },
  };
}
