// What the benches need of other processes: a `mom runner` started as deployed, and the CPU and
// memory of a process from /proc (Linux).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { runnersBucket } = await import(join(root, "libs/contracts/dist/index.js"));

/**
 * Starts `mom runner` on `dataDir` as runner `name` (never NATS_URL: the config's NATS); resolves
 * once its heartbeat is in the runners bucket, read through `bus`.
 */
export async function startRunnerProcess({ dataDir, bus, name, timeoutMs = 30_000 }) {
  const env = { ...process.env, MOM_RUNNER_ID: name };
  delete env.NATS_URL;
  const child = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "runner", dataDir], { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d) => (stderr = (stderr + d).slice(-8000)));
  const exited = new Promise((r) => child.once("exit", r));
  const deadline = Date.now() + timeoutMs;
  while (!(await hasHeartbeat(bus, name))) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill("SIGKILL");
      throw new Error(`runner ${name} did not start:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { name, child, exited };
}

async function hasHeartbeat(bus, name) {
  const kv = await bus.existingKeyValue(runnersBucket(bus.subjects.namespace)).catch(() => undefined);
  const e = await kv?.get(name).catch(() => undefined);
  return e?.operation === "PUT";
}

/** CPU seconds (user+sys) of another process; undefined where /proc cannot tell. */
export function procCpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime
    return ticks / 100; // USER_HZ is 100 on every Linux we care about
  } catch {
    return undefined;
  }
}

/** Resident memory of another process in bytes; undefined where /proc cannot tell. */
export function procRssBytes(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
