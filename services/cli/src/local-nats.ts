import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, openSync, readFileSync } from "node:fs";
import { connect as tcpConnect, createServer } from "node:net";
import { join } from "node:path";

export const NATS_INSTALL_HINT = "nats-server not found: install it with `sudo apt-get install -y nats-server`, or set NATS_URL to a NATS server with JetStream";

export function findNatsServerBinary(): string | undefined {
  for (const candidate of [process.env.NATS_SERVER_BIN, "nats-server", "/usr/sbin/nats-server", "/usr/local/bin/nats-server"]) {
    if (candidate && spawnSync(candidate, ["--version"], { stdio: "ignore" }).status === 0) return candidate;
  }
  return undefined;
}

async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer().once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

/**
 * A `mom up` killed outright (kill -9, a closed terminal) leaves its nats-server running on the
 * store. The caller holds the data dir's lock, so a nats-server still named by the store's pid
 * file is such an orphan: two servers on one store corrupt it, so it is stopped first.
 */
export async function stopOrphan(pidFile: string, storeDir: string): Promise<number | undefined> {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFile, "utf8").trim());
  } catch {
    return undefined;
  }
  const isNats = () => {
    try {
      // Only a nats-server on this very store: a pid file can outlive its process, and pids are reused.
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return cmdline.some((a) => a.includes("nats-server")) && cmdline.includes(storeDir);
    } catch {
      return false; // gone (or not Linux: then nothing can be checked, and nothing is killed)
    }
  };
  if (!Number.isInteger(pid) || pid <= 0 || !isNats()) return undefined;
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + 5000;
  let forced = false;
  while (isNats()) {
    if (!forced && Date.now() > deadline) forced = process.kill(pid, "SIGKILL");
    await new Promise((r) => setTimeout(r, 50));
  }
  return pid;
}

export interface LocalNats {
  url: string;
  /** The pid of an orphaned nats-server that was stopped first (see stopOrphan). */
  orphanStopped?: number;
  stop(): Promise<void>;
  /** SIGKILL, at once: for a shutdown that ran out of time. */
  kill(): void;
}

/** A private nats-server for `mom up`: loopback only, JetStream store and log under the data dir. */
export async function startLocalNats(dataDir: string, o: { onSpawn?: (kill: () => void) => void } = {}): Promise<LocalNats> {
  const bin = findNatsServerBinary();
  if (!bin) throw new Error(NATS_INSTALL_HINT);
  const storeDir = join(dataDir, "nats");
  mkdirSync(storeDir, { recursive: true });
  const pidFile = join(storeDir, "nats-server.pid");
  const orphanStopped = await stopOrphan(pidFile, storeDir);
  const port = await freeLoopbackPort();
  const log = openSync(join(dataDir, "nats", "nats-server.log"), "a");
  // Its own process group: a Ctrl-C in the terminal reaches `mom up`, which stops its services
  // while their NATS is still there, and only then this server.
  const child: ChildProcess = spawn(bin, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir, "-P", pidFile], {
    stdio: ["ignore", log, log],
    detached: true,
  });
  // A stop that cannot wait for the server to listen (a second Ctrl-C) can still kill it.
  o.onSpawn?.(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  const deadline = Date.now() + 10_000;
  while (!(await listening(port))) {
    if (child.exitCode !== null) throw new Error(`nats-server exited (${child.exitCode}); see ${join(storeDir, "nats-server.log")}`);
    if (Date.now() > deadline) throw new Error("nats-server did not start within 10 s");
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    ...(orphanStopped && { orphanStopped }),
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
      await exited;
      clearTimeout(timer);
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
  };
}
