import { readdirSync, readFileSync } from "node:fs";

/** Whether a process exists (and is not a zombie waiting for its parent). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/** Every live descendant of `pid` (children, their children, …), from /proc. */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    const p = Number(name);
    if (!Number.isInteger(p)) continue;
    const parent = parentOf(p);
    if (parent === undefined) continue;
    children.set(parent, [...(children.get(parent) ?? []), p]);
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out.filter(alive);
}

/** The command line of a process, "" when it is gone. */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
  } catch {
    return "";
  }
}

/** Waits until `check` holds, polling; false when `timeoutMs` passed first. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Live processes (not zombies) whose command line contains `needle`, this one aside. */
export function processesWith(needle: string): number[] {
  return readdirSync("/proc")
    .map(Number)
    .filter((p) => Number.isInteger(p) && p !== process.pid && alive(p) && commandLine(p).includes(needle));
}
