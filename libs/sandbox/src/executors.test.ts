import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { spawnNatsServer, type TestNats } from "@mom/testing";
import { createServer, type Server } from "node:net";
import { rmSync } from "node:fs";
import { BwrapExecutor, bwrapAvailable } from "./bwrap-executor.js";
import { HostExecutor } from "./host-executor.js";
import { pidsCgroupBase } from "./pids-cgroup.js";
import { channelView } from "./view.js";
import type { Executor } from "./executor.js";
import { DEFAULT_MAX_PROCESSES, DEFAULT_SHARED, Sandbox } from "./sandbox.js";
import { makeDataDir, processesWith, run } from "./test-support.js";

const MB = 1024 * 1024;
const SECRET = "s3cret-runner-token-4242";

if (!bwrapAvailable()) {
  throw new Error("bubblewrap (bwrap) is missing or cannot create namespaces here: `npm test` installs it (apt-get install -y bubblewrap)");
}

// Each executor with the per-command pids cgroup (where this machine allows one) and without it
// (an unprivileged runner): the kill of the whole tree must hold either way.
const variants = [
  ["host", true],
  ["host", false],
  ["bwrap", true],
  ["bwrap", false],
] as const;

describe.each(variants)("%s executor (pids cgroup: %s)", (type, withCgroup) => {
  const dirs = makeDataDir();
  let executor: Executor;

  beforeAll(() => {
    process.env.MOM_TEST_SECRET = SECRET;
    const options = { view: channelView({ ...dirs, channelDir: dirs.channelA, shared: DEFAULT_SHARED }), env: { GREETING: "hello" }, maxOutputBytes: MB };
    const cgroupBase = withCgroup ? pidsCgroupBase() : undefined;
    const pidsLimit = cgroupBase ? { pidsLimit: { cgroupBase, maxProcesses: DEFAULT_MAX_PROCESSES } } : {};
    executor = type === "host" ? new HostExecutor({ ...options, ...pidsLimit }) : new BwrapExecutor({ ...options, ...pidsLimit, network: false });
  });
  afterAll(() => {
    delete process.env.MOM_TEST_SECRET;
    rmSync(dirs.dataDir, { recursive: true, force: true });
  });

  it("runs bash in the channel directory with a clean environment plus the configured variables", async () => {
    const r = await run(executor, "pwd; echo $HOME; echo $GREETING; env; printenv");
    expect(r.exitCode).toBe(0);
    expect(r.output.split("\n").slice(0, 3)).toEqual([dirs.channelA, dirs.channelA, "hello"]);
    expect(r.output).toContain("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    expect(r.output).not.toContain(SECRET);
    expect(r.output).not.toContain("NODE_OPTIONS");
  });

  it("reports the exit code", async () => {
    expect((await run(executor, "exit 7")).exitCode).toBe(7);
  });

  it("cuts /dev/zero at the output cap and stops the command, without buffering it", async () => {
    const before = process.memoryUsage().rss;
    const started = Date.now();
    const r = await run(executor, "cat /dev/zero");
    expect(r.stopped).toBe("output");
    expect(r.outputBytes).toBe(MB);
    expect(r.output.length).toBe(MB);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(process.memoryUsage().rss - before).toBeLessThan(100 * MB);
  });

  it("cuts a 200 MB single line at the cap", async () => {
    let seen = 0;
    const r = await executor.exec({ command: "head -c 200000000 /dev/zero | tr '\\0' a; echo done", onData: (c) => (seen += c.length) });
    expect(r.stopped).toBe("output");
    expect(seen).toBe(MB);
  });

  it("kills the whole tree on timeout, a setsid child too", async () => {
    const tag = `${type === "host" ? 901 : 902}.${withCgroup ? 1 : 2}23`;
    const started = Date.now();
    const r = await run(executor, `setsid sleep ${tag} & (setsid bash -c 'sleep ${tag}1' &); sleep 30`, { timeoutMs: 300 });
    expect(r.stopped).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(5000);
    expect(processesWith(`sleep ${tag}`)).toEqual([]);
  });

  it("kills the whole tree on abort", async () => {
    const tag = `${type === "host" ? 903 : 904}.${withCgroup ? 1 : 2}23`;
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const r = await run(executor, `setsid sleep ${tag} & sleep 30`, { signal: ac.signal });
    expect(r.stopped).toBe("aborted");
    expect(processesWith(`sleep ${tag}`)).toEqual([]);
  });

  // A background job killed as soon as it was started: the abort can come while the command's
  // cgroup is still being made, before the process exists.
  it("an abort made right after the call stops the command", async () => {
    const tag = `${type === "host" ? 905 : 906}.${withCgroup ? 1 : 2}23`;
    const ac = new AbortController();
    const started = Date.now();
    const running = run(executor, `sleep ${tag}`, { signal: ac.signal, timeoutMs: 20_000 });
    await Promise.resolve();
    ac.abort();
    const r = await running;
    expect(r.stopped).toBe("aborted");
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(processesWith(`sleep ${tag}`)).toEqual([]);
  });

  const cgroupBase = new Sandbox({ type }, dirs).cgroupBase;
  // Without the cgroup only the timeout bounds a fork bomb: not run on a shared machine.
  if (withCgroup) (cgroupBase ? it : it.skip)(`stops a fork bomb at the process limit${cgroupBase ? "" : " (skipped: no pids cgroup may be created here)"}`, async () => {
    const limited = new Sandbox({ type, maxProcesses: 32 }, dirs).forChannel(dirs.channelA).executor;
    const started = Date.now();
    const r = await run(limited, "bomb() { bomb | bomb & }; bomb; sleep 30", { timeoutMs: 2000 });
    expect(r.stopped).toBe("timeout");
    expect(r.output).toContain("Resource temporarily unavailable");
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(processesWith("bomb()")).toEqual([]);
  });

  it("killLeftovers finds a command by its execId, a setsid child too, as a runner after the one that started it would", async () => {
    const tag = `${type === "host" ? 907 : 908}.${withCgroup ? 1 : 2}23`;
    const execId = `leftover-${type}-${withCgroup}-${process.pid}`;
    const running = run(executor, `setsid sleep ${tag} & sleep ${tag}1`, { execId, timeoutMs: 30_000 });
    const deadline = Date.now() + 5000;
    while (processesWith(`sleep ${tag}`).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(processesWith(`sleep ${tag}`).length).toBeGreaterThanOrEqual(2);
    await executor.killLeftovers!(execId);
    expect(processesWith(`sleep ${tag}`)).toEqual([]);
    expect((await running).exitCode).not.toBe(0);
    await executor.killLeftovers!("no-such-exec-id");
  });

  it("leaves no background process behind after a normal exit", async () => {
    const tag = `${type === "host" ? 905 : 906}.${withCgroup ? 1 : 2}23`;
    const r = await run(executor, `(setsid sleep ${tag} > /dev/null 2>&1 &); nohup sleep ${tag}1 > /dev/null 2>&1 & echo started`);
    expect(r.output).toBe("started\n");
    expect(r.exitCode).toBe(0);
    expect(processesWith(`sleep ${tag}`)).toEqual([]);
  });
});

describe("bwrap executor isolation", () => {
  const dirs = makeDataDir();
  let executor: Executor;
  let server: Server;
  let port: number;
  let nats: TestNats;

  beforeAll(async () => {
    process.env.MOM_TEST_SECRET = SECRET;
    executor = new Sandbox({ type: "bwrap", sharedWriters: ["cli/a"] }, dirs).forChannel(dirs.channelA, [], "cli/a").executor;
    server = createServer((s) => s.end("hello from the host\n"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as { port: number }).port;
    nats = await spawnNatsServer();
  });
  afterAll(async () => {
    delete process.env.MOM_TEST_SECRET;
    server.close();
    await nats.stop();
    rmSync(dirs.dataDir, { recursive: true, force: true });
  });

  it("shows no secret in env, /proc/1/environ or the runner's /proc entry", async () => {
    const r = await run(executor, `env; cat /proc/1/environ; cat /proc/${process.pid}/environ; ls /proc`);
    expect(r.output).not.toContain(SECRET);
    expect(r.output).toContain("No such file");
  });

  it("hides other channels, the data dir's config and the host's home", async () => {
    const r = await run(executor, `ls ${dirs.workspaceDir}/channels/cli; cat ${dirs.channelB}/log.jsonl; cat ../b/MEMORY.md; cat ${dirs.dataDir}/config.json; ls /root /work 2>&1 | head -3`);
    expect(r.output.split("\n")[0]).toBe("a");
    expect(r.output).not.toContain("channel b private");
    expect(r.output).not.toContain("b's memory");
    expect(r.output).not.toContain("xoxb-config-secret");
  });

  it("lets the channel write only its own directory and the shared workspace files", async () => {
    const r = await run(
      executor,
      `echo ok > mine.txt && cat mine.txt; echo x >> ${dirs.workspaceDir}/MEMORY.md && echo memory-ok; mkdir -p ${dirs.workspaceDir}/skills/s && echo skills-ok;
       echo 'evil' > ${dirs.workspaceDir}/tools/x/index.mjs; echo 'evil' > ${dirs.workspaceDir}/tools/y.mjs; touch /usr/evil; touch /etc/evil`,
    );
    expect(r.output).toContain("ok\nmemory-ok\nskills-ok");
    expect(r.output.match(/Read-only file system/g)?.length).toBe(4);
  });

  it("has no network: neither a loopback server on the host nor NATS", async () => {
    const natsPort = new URL(nats.url).port;
    const r = await run(executor, `exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3; exec 4<>/dev/tcp/127.0.0.1/${natsPort} && head -c 4 <&4; echo end`);
    expect(r.output).not.toContain("hello from the host");
    expect(r.output).not.toContain("INFO");
    expect(r.output.match(/\/dev\/tcp\/127.0.0.1\/\d+: (Connection refused|Network is unreachable)/g)?.length).toBe(2);
    expect(r.output).toContain("end");
  });

  it("reaches the host's loopback when sandbox.network allows it", async () => {
    const open = new Sandbox({ type: "bwrap", network: true }, dirs).forChannel(dirs.channelA).executor;
    const r = await run(open, `exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3`);
    expect(r.output).toBe("hello from the host\n");
  });

  it("keeps a private /tmp per command", async () => {
    await run(executor, "echo left > /tmp/left-behind");
    expect((await run(executor, "cat /tmp/left-behind 2>&1")).output).toContain("No such file");
  });
});
