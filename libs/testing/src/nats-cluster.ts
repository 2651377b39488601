// A JetStream cluster of nats-servers on loopback, for tests and benches that need what production
// runs (every stream at replicas 3) and the faults only a cluster has: leader elections, a node
// frozen or gone while the others carry on, a rolling restart.
import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { findNatsServer, freePort, type TestNats, uniqueNamespace, waitForPort } from "./nats-server.js";

export interface NatsNode {
  /** `server_name`, as JetStream names leaders and peers ("n0", "n1", …). */
  readonly name: string;
  readonly port: number;
  readonly clusterPort: number;
  readonly monitorPort: number;
  /** This node alone, e.g. `nats://127.0.0.1:4222` (what a Service IP gives a client). */
  readonly url: string;
  readonly storeDir: string;
  /** Spawned and not exited (it may be paused). */
  readonly running: boolean;
  readonly paused: boolean;
  readonly pid: number | undefined;
  kill9(): Promise<void>;
  /** SIGTERM: the server hands its leaderships over and exits; resolves on exit. */
  stop(): Promise<void>;
  /** Same as stop(). */
  sigterm(): Promise<void>;
  /**
   * Lame duck mode (SIGUSR2, what `nats-server --signal ldm` and the manifests' preStop send): the
   * node stops taking clients, hands its leaderships over, closes its clients over 30 s (after a
   * 10 s grace, as k8s/base/nats/nats.conf) and exits. Resolves on exit.
   */
  lameDuck(): Promise<void>;
  /** Starts it again on the same ports and store; resolves when it accepts clients. */
  start(): Promise<void>;
  /** SIGSTOP: the process is frozen, its sockets stay open (a hung VM, a GC pause, a stuck disk). */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** kill -9, stay down `downMs`, start again. */
  restart(downMs?: number): Promise<void>;
}

export interface TestNatsCluster extends TestNats {
  readonly nodes: NatsNode[];
  node(name: string): NatsNode;
  /** The server_name leading a stream (e.g. "MOM_IN", "KV_MOM_CHANNELS"), undefined while it has none. */
  leaderOf(stream: string): Promise<string | undefined>;
  /** The server_name leading the JetStream meta group, undefined while it has none. */
  metaLeader(): Promise<string | undefined>;
  /** The connection names (`name` connect option) of the clients connected to a node now. */
  clientsOf(node: string): Promise<string[]>;
  /**
   * Resolves when every node runs (not paused), the meta group and every stream have a leader and
   * every replica is current; rejects after `timeoutMs` saying what was still missing.
   */
  waitForHealth(timeoutMs?: number): Promise<void>;
}

export interface ClusterOptions {
  /** Copy each node's log file here on stop() (to read after a failure). */
  keepLogsIn?: string;
}

interface JszStream {
  name: string;
  cluster?: { leader?: string; replicas?: { name: string; current: boolean; offline?: boolean }[] };
}
interface Jsz {
  meta_cluster?: { leader?: string; cluster_size?: number; replicas?: { name: string; current: boolean; offline?: boolean }[] };
  account_details?: { stream_detail?: JszStream[] }[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Killed or crashed test processes must not leave servers holding ports and temp dirs behind.
const live = new Set<ChildProcess>();
let exitHook = false;
function track(child: ChildProcess): void {
  live.add(child);
  child.once("exit", () => live.delete(child));
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const c of live) {
      try {
        c.kill("SIGCONT");
        c.kill("SIGKILL");
      } catch {
        // already gone
      }
    }
  });
}

async function getJson<T>(port: number, path: string, timeoutMs = 1000): Promise<T | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return undefined;
    return (await res.json()) as T;
  } catch {
    return undefined;
  }
}

async function getStatus(port: number, path: string, timeoutMs = 1000): Promise<{ ok: boolean; text: string }> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
    return { ok: res.ok, text: await res.text() };
  } catch (err) {
    return { ok: false, text: err instanceof Error ? err.message : String(err) };
  }
}

class Node implements NatsNode {
  private child?: ChildProcess;
  private frozen = false;
  readonly url: string;

  constructor(
    readonly name: string,
    readonly port: number,
    readonly clusterPort: number,
    readonly monitorPort: number,
    readonly storeDir: string,
    private readonly configFile: string,
    private readonly bin: string,
  ) {
    this.url = `nats://127.0.0.1:${port}`;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }
  get paused(): boolean {
    return this.running && this.frozen;
  }
  get pid(): number | undefined {
    return this.running ? this.child!.pid : undefined;
  }

  async start(): Promise<void> {
    if (this.running) return;
    const child = spawn(this.bin, ["-c", this.configFile], { stdio: "ignore" });
    this.child = child;
    this.frozen = false;
    track(child);
    await waitForPort(this.port, child, 15_000);
  }

  async kill9(): Promise<void> {
    await this.signalAndWait("SIGKILL");
  }

  async stop(): Promise<void> {
    // A server that will not finish its shutdown is killed: a test must never hang on it.
    const killer = setTimeout(() => this.child?.kill("SIGKILL"), 30_000);
    try {
      await this.signalAndWait("SIGTERM");
    } finally {
      clearTimeout(killer);
    }
  }

  sigterm(): Promise<void> {
    return this.stop();
  }

  async lameDuck(): Promise<void> {
    const killer = setTimeout(() => this.child?.kill("SIGKILL"), 90_000);
    try {
      await this.signalAndWait("SIGUSR2");
    } finally {
      clearTimeout(killer);
    }
  }

  pause(): void {
    if (!this.running) throw new Error(`${this.name} is not running`);
    this.child!.kill("SIGSTOP");
    this.frozen = true;
    // The stop lands on every thread a moment later: until it has, the server still answers (a
    // connect right after pause() once got its INFO). Return only once all of it is stopped.
    const pid = this.child!.pid!;
    const deadline = Date.now() + 2000;
    while (!allThreadsStopped(pid)) {
      if (Date.now() > deadline) throw new Error(`${this.name} (pid ${pid}) did not stop within 2 s of SIGSTOP`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
    }
  }

  resume(): void {
    if (!this.running) return;
    this.child!.kill("SIGCONT");
    this.frozen = false;
  }

  async restart(downMs = 0): Promise<void> {
    await this.kill9();
    if (downMs > 0) await sleep(downMs);
    await this.start();
  }

  private async signalAndWait(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    const exited = new Promise((r) => child.once("exit", r));
    // A frozen process cannot act on SIGTERM, and SIGKILL of a stopped one is fine but SIGCONT keeps it uniform.
    if (this.frozen) child.kill("SIGCONT");
    this.frozen = false;
    child.kill(signal);
    await exited;
  }
}

/** The first port the kernel hands out to outgoing connections (Linux), 32768 by default. */
function ephemeralLow(): number {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/**
 * A free loopback port below the ephemeral range. A port from listen(0) is an ephemeral one, and
 * the cluster's own route connections (or any other process's) can take it as their local port
 * before the node that was to listen on it starts: that node then exits ("address already in use")
 * just after its client port answered, and the cluster never forms.
 */
async function clusterPort(taken: Set<number>): Promise<number> {
  const high = ephemeralLow() - 1;
  const low = 10_000;
  if (high - low < 1000) return freePort();
  for (let tries = 0; tries < 200; tries++) {
    const p = low + Math.floor(Math.random() * (high - low));
    if (taken.has(p)) continue;
    if (await canListen(p)) return taken.add(p), p;
  }
  return freePort();
}

function nodeConfig(p: { name: string; port: number; clusterPort: number; monitorPort: number; storeDir: string; logFile: string; clusterName: string; routes: number[] }): string {
  // JSON is valid NATS config syntax, so nothing here needs quoting rules of its own.
  return JSON.stringify(
    {
      server_name: p.name,
      host: "127.0.0.1",
      port: p.port,
      http: `127.0.0.1:${p.monitorPort}`,
      log_file: p.logFile,
      // As the manifests (30 s is the least nats-server accepts).
      lame_duck_duration: "30s",
      lame_duck_grace_period: "10s",
      jetstream: { store_dir: p.storeDir },
      cluster: {
        name: p.clusterName,
        host: "127.0.0.1",
        port: p.clusterPort,
        routes: p.routes.map((r) => `nats-route://127.0.0.1:${r}`),
      },
    },
    null,
    2,
  );
}

/**
 * Spawns `n` nats-servers (default 3) forming one JetStream cluster on 127.0.0.1, each with its own
 * client, cluster and monitoring port, server_name and store dir. Resolves once the cluster has a
 * JetStream meta leader. `url` names every node, comma-separated.
 */
export async function spawnNatsCluster(n = 3, bin = findNatsServer(), opts: ClusterOptions = {}): Promise<TestNatsCluster> {
  if (!bin) throw new Error("nats-server not found: install it (apt-get install -y nats-server) or set NATS_SERVER_BIN");
  if (n < 1) throw new Error(`a cluster needs at least one node, got ${n}`);
  const dir = mkdtempSync(join(tmpdir(), "mom-nats-cluster-"));
  let nodes: Node[] = [];
  // A node can still lose a port race (another test's server): then the cluster is laid out again.
  const layOut = async (attempt: number) => {
    const taken = new Set<number>();
    const ports: { port: number; clusterPort: number; monitorPort: number }[] = [];
    for (let i = 0; i < n; i++) ports.push({ port: await clusterPort(taken), clusterPort: await clusterPort(taken), monitorPort: await clusterPort(taken) });
    const clusterName = `mom-${uniqueNamespace("c")}`;
    nodes = ports.map((p, i) => {
      const name = `n${i}`;
      const home = join(dir, `${attempt}`, name);
      const storeDir = join(home, "store");
      mkdirSync(storeDir, { recursive: true });
      const configFile = join(home, "server.conf");
      const routes = ports.filter((_, j) => j !== i).map((o) => o.clusterPort);
      writeFileSync(configFile, nodeConfig({ name, ...p, storeDir, logFile: join(home, "server.log"), clusterName, routes }));
      return new Node(name, p.port, p.clusterPort, p.monitorPort, storeDir, configFile, bin);
    });
  };

  const live = () => nodes.filter((x) => x.running && !x.paused);
  const jsz = (x: Node) => getJson<Jsz>(x.monitorPort, "/jsz?accounts=true&streams=true");
  const streamsOf = (z: Jsz | undefined) => (z?.account_details ?? []).flatMap((a) => a.stream_detail ?? []);

  // A leader is whoever says so of itself: a follower's view of the leader can lag behind an
  // election, and a killed or frozen leader is not asked.
  const metaLeader = async () => {
    for (const x of live()) {
      if ((await jsz(x))?.meta_cluster?.leader === x.name) return x.name;
    }
    return undefined;
  };
  const leaderOf = async (stream: string) => {
    for (const x of live()) {
      const s = streamsOf(await jsz(x)).find((y) => y.name === stream);
      if (s && (s.cluster?.leader === x.name || n === 1)) return x.name;
    }
    return undefined;
  };

  const healthProblem = async (): Promise<string | undefined> => {
    const down = nodes.filter((x) => !x.running || x.paused).map((x) => x.name);
    if (down.length) return `not running: ${down.join(", ")}`;
    for (const x of nodes) {
      // The full check (not js-enabled-only): meta group joined, every stream and consumer it holds current.
      const h = await getStatus(x.monitorPort, "/healthz");
      // A consumer healthz names but that is gone (an ordered consumer a client closed) has nothing
      // to catch up; the streams are checked below.
      if (!h.ok && !/is not current: consumer not found/.test(h.text)) return `${x.name} /healthz: ${h.text.trim()}`;
    }
    const meta = await metaProblem();
    if (meta) return meta;
    const leaders = new Map<string, JszStream>();
    for (const x of nodes) for (const s of streamsOf(await jsz(x))) if (s.cluster?.leader === x.name) leaders.set(s.name, s);
    const names = new Set(nodes.length ? streamsOf(await jsz(nodes[0]!)).map((s) => s.name) : []);
    for (const name of names) {
      const s = leaders.get(name);
      if (!s && n > 1) return `stream ${name} has no leader`;
      const behind = (s?.cluster?.replicas ?? []).filter((r) => !r.current || r.offline).map((r) => r.name);
      if (behind.length) return `stream ${name}: replicas not current: ${behind.join(", ")}`;
    }
    return undefined;
  };

  const waitForHealth = async (timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    let problem: string | undefined;
    while ((problem = await healthProblem())) {
      if (Date.now() > deadline) throw new Error(`NATS cluster not healthy within ${timeoutMs} ms: ${problem}`);
      await sleep(100);
    }
  };

  // A leader alone is not enough: until it has heard from every peer, an R3 stream is refused
  // with "no suitable peers for placement".
  const metaProblem = async (): Promise<string | undefined> => {
    const exited = nodes.filter((x) => !x.running).map((x) => x.name);
    if (exited.length) return `not running: ${exited.join(", ")}`;
    if (n === 1) return undefined;
    for (const x of live()) {
      const meta = (await jsz(x))?.meta_cluster;
      if (meta?.leader !== x.name) continue;
      const peers = (meta.replicas ?? []).filter((r) => r.current && !r.offline).length;
      return peers >= n - 1 ? undefined : `meta leader ${x.name} has ${peers} of ${n - 1} peers current`;
    }
    return "no meta leader";
  };

  const waitForMetaLeader = async (timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    let problem: string | undefined;
    while ((problem = await metaProblem())) {
      if (Date.now() > deadline) throw new Error(`NATS cluster not formed within ${timeoutMs} ms: ${problem}`);
      await sleep(100);
    }
  };

  const stopAll = async () => {
    await Promise.all(nodes.map((x) => x.kill9()));
  };
  const keepLogs = () => {
    if (!opts.keepLogsIn) return;
    mkdirSync(opts.keepLogsIn, { recursive: true });
    for (const x of nodes) {
      const log = join(dirname(x.storeDir), "server.log");
      if (existsSync(log)) copyFileSync(log, join(opts.keepLogsIn, `nats-${x.name}.log`));
    }
  };

  for (let attempt = 1; ; attempt++) {
    await layOut(attempt);
    try {
      await Promise.all(nodes.map((x) => x.start()));
      await waitForMetaLeader(30_000);
      break;
    } catch (err) {
      await stopAll();
      // A node that exited lost a port, and one whose route port another test's server took
      // dials that server and never becomes current ("not formed"): lay out again on new ports.
      // Anything else is for the caller to see.
      if (attempt < 3 && /exited|not running|not formed/.test((err as Error).message)) continue;
      keepLogs();
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
  }

  return {
    url: nodes.map((x) => x.url).join(","),
    namespace: uniqueNamespace(),
    nodes,
    node(name: string) {
      const x = nodes.find((y) => y.name === name);
      if (!x) throw new Error(`no node ${name} (have ${nodes.map((y) => y.name).join(", ")})`);
      return x;
    },
    leaderOf,
    metaLeader,
    async clientsOf(name: string) {
      const x = nodes.find((y) => y.name === name);
      if (!x?.running || x.paused) return [];
      const connz = await getJson<{ connections?: { name?: string }[] }>(x.monitorPort, "/connz?limit=1024");
      return (connz?.connections ?? []).map((c) => c.name ?? "");
    },
    waitForHealth,
    // The whole cluster down and up again (what a single-server test's restart() means).
    async restart(downMs = 0) {
      await stopAll();
      if (downMs > 0) await sleep(downMs);
      await Promise.all(nodes.map((x) => x.start()));
      await waitForMetaLeader(30_000);
    },
    async stop() {
      await stopAll();
      keepLogs();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Whether every thread of a process is stopped (state T or t in /proc/<pid>/task/<tid>/stat). */
function allThreadsStopped(pid: number): boolean {
  try {
    return readdirSync(`/proc/${pid}/task`).every((tid) => {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      return state === "T" || state === "t";
    });
  } catch {
    return true; // gone: nothing of it runs
  }
}
