import { readdir, readFile } from "node:fs/promises";

interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
}

async function procInfo(pid: number): Promise<ProcInfo | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may contain spaces and parentheses: fields start after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // A zombie is already dead; only its parent can reap it.
    if (fields[0] === "Z") return undefined;
    return { pid, ppid: Number(fields[1]), pgid: Number(fields[2]), sid: Number(fields[3]) };
  } catch {
    return undefined;
  }
}

/**
 * Whether the process carries the marker; "unsure" when its environment reads empty, as it does
 * for a moment while a process execs (a `setsid sleep` caught mid-exec would otherwise be missed).
 */
async function hasMarker(pid: number, marker: string): Promise<boolean | "unsure"> {
  try {
    const environ = await readFile(`/proc/${pid}/environ`, "latin1");
    return environ === "" ? "unsure" : environ.split("\0").includes(marker);
  } catch {
    return false;
  }
}

/** The processes of a command, and how many others could not be told apart yet (see hasMarker). */
interface Scan {
  pids: number[];
  unsure: number;
}

/**
 * Every process that belongs to one command started on the host: the root's descendants (by
 * parent), its process group and session, and — for those that re-parented themselves with
 * `setsid` plus a double fork — every process that still carries the command's environment marker.
 */
export async function commandProcesses(rootPid: number | undefined, marker: string): Promise<Scan> {
  let pids: number[];
  try {
    pids = (await readdir("/proc")).filter((n) => /^\d+$/.test(n)).map(Number);
  } catch {
    return { pids: rootPid === undefined ? [] : [rootPid], unsure: 0 }; // no /proc: the process group is the best we can do
  }
  const infos = (await Promise.all(pids.map(procInfo))).filter((p): p is ProcInfo => p !== undefined && p.pid !== process.pid);
  const found = new Set<number>();
  if (rootPid !== undefined) for (const p of infos) if (p.pid === rootPid || p.pgid === rootPid || p.sid === rootPid) found.add(p.pid);
  const marked = await Promise.all(infos.map((p) => hasMarker(p.pid, marker)));
  infos.forEach((p, i) => marked[i] === true && found.add(p.pid));
  // Kernel threads (kthreadd, pid 2, and its children) have no environment at all: not unsure.
  const unsure = infos.filter((p, i) => marked[i] === "unsure" && p.pid !== 2 && p.ppid !== 2).length;
  // Descendants of anything found so far, to a fixed point.
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of infos) {
      if (!found.has(p.pid) && found.has(p.ppid)) {
        found.add(p.pid);
        grew = true;
      }
    }
  }
  return { pids: [...found], unsure };
}

/** SIGKILLs every process of the command, again until none is left (a fork between scans is caught next round). */
export async function killCommandTree(rootPid: number, marker: string): Promise<void> {
  killGroup(rootPid); // also where there is no /proc to scan
  await killScanned(rootPid, marker);
}

/** SIGKILLs the process group a detached command leads. */
export function killGroup(rootPid: number): void {
  try {
    process.kill(-rootPid, "SIGKILL");
  } catch {
    // no such group any more
  }
}

/**
 * SIGKILLs every process that still carries the marker (and their descendants) when the process
 * that started them is gone: what a command of a runner that died left behind. Resolves how many
 * were signalled.
 */
export function killMarkedProcesses(marker: string): Promise<number> {
  return killScanned(undefined, marker);
}

async function killScanned(rootPid: number | undefined, marker: string): Promise<number> {
  let signalled = 0;
  for (let round = 0; round < 5; round++) {
    const { pids, unsure } = await commandProcesses(rootPid, marker);
    let alive = 0;
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
        alive++;
      } catch {
        // already gone
      }
    }
    signalled += alive;
    // None left, unless a process was caught mid-exec: it is looked at again next round.
    if (alive === 0 && unsure === 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return signalled;
}
