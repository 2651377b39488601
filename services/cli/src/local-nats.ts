import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, openSync } from "node:fs";
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

export interface LocalNats {
  url: string;
  stop(): Promise<void>;
}

/** A private nats-server for `mom up`: loopback only, JetStream store and log under the data dir. */
export async function startLocalNats(dataDir: string): Promise<LocalNats> {
  const bin = findNatsServerBinary();
  if (!bin) throw new Error(NATS_INSTALL_HINT);
  const storeDir = join(dataDir, "nats");
  mkdirSync(storeDir, { recursive: true });
  const port = await freeLoopbackPort();
  const log = openSync(join(dataDir, "nats", "nats-server.log"), "a");
  const child: ChildProcess = spawn(bin, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], {
    stdio: ["ignore", log, log],
  });
  const deadline = Date.now() + 10_000;
  while (!(await listening(port))) {
    if (child.exitCode !== null) throw new Error(`nats-server exited (${child.exitCode}); see ${join(storeDir, "nats-server.log")}`);
    if (Date.now() > deadline) throw new Error("nats-server did not start within 10 s");
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
