import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";

export interface TestNats {
  /** nats:// URL to connect to. */
  url: string;
  /** A namespace no other test uses, for `createSubjects()` / bus options. */
  namespace: string;
  /** JetStream store dir when this harness spawned the server. */
  storeDir?: string;
  stop(): Promise<void>;
  /** Kill and start the spawned server again on the same port and store (restart tests); `downMs`: stay down that long first (an outage). */
  restart?(downMs?: number): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

export function uniqueNamespace(prefix = "t"): string {
  return `${prefix}-${randomBytes(5).toString("hex")}`;
}

export function findNatsServer(): string | undefined {
  const envBin = process.env.NATS_SERVER_BIN;
  if (envBin) return envBin;
  for (const candidate of ["nats-server", "/usr/sbin/nats-server", "/usr/local/bin/nats-server"]) {
    const r = spawnSync(candidate, ["--version"], { stdio: "ignore" });
    if (r.status === 0) return candidate;
  }
  return undefined;
}

/** Resolves once a spawned server (`name`, for the errors) listens on `port`; throws when it exits first or takes too long. */
export async function waitForPort(port: number, child: ChildProcess, timeoutMs: number, name = "nats-server"): Promise<void> {
  const { connect } = await import("node:net");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited with ${child.exitCode ?? child.signalCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, "127.0.0.1");
      s.once("connect", () => (s.destroy(), resolve(true)));
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${name} did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Spawns `nats-server -js` on a free loopback port with its own store dir. */
export async function spawnNatsServer(bin = findNatsServer()): Promise<TestNats> {
  if (!bin) throw new Error("nats-server not found: install it (apt-get install -y nats-server) or set NATS_URL");
  const port = await freePort();
  const storeDir = mkdtempSync(join(tmpdir(), "mom-nats-"));
  let child: ChildProcess;
  const start = async () => {
    child = spawn(bin, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], { stdio: "ignore" });
    await waitForPort(port, child, 10_000);
  };
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;
  };
  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    namespace: uniqueNamespace(),
    storeDir,
    async restart(downMs = 0) {
      await kill();
      if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
      await start();
    },
    async stop() {
      await kill();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

/**
 * A NATS server for one test file: `NATS_URL` when set (with a fresh namespace so tests never meet),
 * else a spawned nats-server, else a testcontainers NATS where a Docker engine exists.
 */
export async function startTestNats(): Promise<TestNats> {
  if (process.env.NATS_URL) {
    return { url: process.env.NATS_URL, namespace: uniqueNamespace(), async stop() {} };
  }
  const bin = findNatsServer();
  if (bin) return spawnNatsServer(bin);
  return startContainerNats();
}

async function startContainerNats(): Promise<TestNats> {
  let mod: typeof import("@testcontainers/nats");
  try {
    mod = await import("@testcontainers/nats");
  } catch {
    throw new Error("no NATS for tests: set NATS_URL, or install nats-server (apt-get install -y nats-server)");
  }
  // Fails fast with testcontainers' own message when no Docker engine is reachable.
  const started = await new mod.NatsContainer("nats:2.10").withJetStream().start();
  const servers = started.getConnectionOptions().servers;
  const hostPort = Array.isArray(servers) ? servers[0]! : String(servers);
  return {
    url: hostPort.includes("://") ? hostPort : `nats://${hostPort}`,
    namespace: uniqueNamespace(),
    async stop() {
      await started.stop();
    },
  };
}
