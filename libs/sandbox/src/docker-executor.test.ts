import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startTestDockerEngine, type TestDockerEngine } from "@mom/testing";
import { createServer, type Server } from "node:net";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Executor } from "./executor.js";
import { Sandbox } from "./sandbox.js";
import { makeDataDir, run } from "./test-support.js";

const MB = 1024 * 1024;
const SECRET = "s3cret-runner-token-docker";

const started = await startTestDockerEngine();
const engine: TestDockerEngine | undefined = "engine" in started ? started.engine : undefined;
if (!engine) console.warn(`docker executor tests skipped: ${"skip" in started ? started.skip : ""}`);
const describeDocker = engine ? describe : describe.skip;

describeDocker(`docker executor${engine ? "" : " (skipped: no Docker engine could be started here)"}`, () => {
  const dirs = makeDataDir();
  let sandbox: Sandbox;
  let executor: Executor;
  let server: Server;
  let port: number;

  beforeAll(async () => {
    process.env.MOM_TEST_SECRET = SECRET;
    const image = await engine!.importTestImage();
    sandbox = new Sandbox({ type: "docker", image, socketPath: engine!.socketPath, env: { GREETING: "hello" }, maxOutputBytes: MB, maxProcesses: 64, memoryMb: 256 }, dirs);
    executor = sandbox.forChannel(dirs.channelA, [join(dirs.channelA, "log.jsonl")]).executor;
    server = createServer((s) => s.end("hello from the host\n"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as { port: number }).port;
  }, 120_000);
  afterAll(async () => {
    delete process.env.MOM_TEST_SECRET;
    server?.close();
    await engine?.stop();
    rmSync(dirs.dataDir, { recursive: true, force: true });
  }, 60_000);

  it("creates the channel's container on demand and runs bash in the channel directory with a clean environment", async () => {
    const r = await run(executor, "pwd; echo $HOME; echo $GREETING; env; cat /proc/1/environ");
    expect(r.exitCode).toBe(0);
    expect(r.output.split("\n").slice(0, 3)).toEqual([dirs.channelA, dirs.channelA, "hello"]);
    expect(r.output).not.toContain(SECRET);
    expect((await run(executor, "exit 3")).exitCode).toBe(3);
  }, 60_000);

  it("killLeftovers kills what a command left in the container, found by its execId (a runner that died cannot kill its docker exec)", async () => {
    const execId = `leftover-docker-${process.pid}`;
    const running = run(executor, "setsid sleep 909.123 & sleep 909.1231", { execId, timeoutMs: 30_000 });
    const count = async () => (await run(executor, "ps -eo args | grep -c '^sleep 909.123' || true")).output.trim();
    const deadline = Date.now() + 10_000;
    while ((await count()) !== "2" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await count()).toBe("2");
    await executor.killLeftovers!(execId);
    expect(await count()).toBe("0");
    expect((await running).exitCode).not.toBe(0);
  }, 60_000);

  it("hides other channels and the data dir, and lets the channel write only its own directory", async () => {
    const r = await run(
      executor,
      `ls ${dirs.workspaceDir}/channels/cli; cat ${dirs.channelB}/log.jsonl; cat ${dirs.dataDir}/config.json; echo ok > mine.txt && cat mine.txt; echo evil > ${dirs.workspaceDir}/tools/x/index.mjs; echo evil > log.jsonl; touch /bin/evil`,
    );
    // stdout and stderr come as separate streams: lines, not their order.
    expect(r.output.split("\n")).toContain("a");
    expect(r.output.split("\n")).not.toContain("b");
    expect(r.output).not.toContain("channel b private");
    expect(r.output).not.toContain("xoxb-config-secret");
    expect(r.output).toContain("ok\n");
    expect(r.output.match(/Read-only file system/g)?.length).toBe(3);
    expect(readFileSync(join(dirs.workspaceDir, "tools/x/index.mjs"), "utf8")).toBe("export default {};\n");
  }, 60_000);

  it("has no network: the host's loopback server is out of reach", async () => {
    const r = await run(executor, `exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3; echo end`);
    expect(r.output).not.toContain("hello from the host");
    expect(r.output).toContain("end");
  }, 60_000);

  it("cuts /dev/zero at the output cap, and kills the whole tree (setsid too) on timeout", async () => {
    const cut = await run(executor, "cat /dev/zero");
    expect(cut).toMatchObject({ stopped: "output", outputBytes: MB });
    const t0 = Date.now();
    const r = await run(executor, "setsid sleep 777 & sleep 30", { timeoutMs: 500 });
    expect(r.stopped).toBe("timeout");
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await run(executor, "ps | grep -c 'sleep 77[7]' || true")).output.trim()).toBe("0");
  }, 60_000);

  it("an abort made while the exec is being made, or just after it started, stops the command", async () => {
    for (const wait of [0, 50, 150]) {
      const ac = new AbortController();
      const t0 = Date.now();
      const running = run(executor, `setsid sleep 778.${wait} & sleep 779.${wait}`, { signal: ac.signal, timeoutMs: 30_000 });
      setTimeout(() => ac.abort(), wait);
      expect((await running).stopped).toBe("aborted");
      expect(Date.now() - t0).toBeLessThan(15_000);
    }
    expect((await run(executor, "ps | grep -c 'sleep 77[89]' || true")).output.trim()).toBe("0");
  }, 90_000);

  it("stops a fork bomb at the container's pids limit", async () => {
    const r = await run(executor, "bomb() { bomb | bomb & }; bomb; sleep 30", { timeoutMs: 2000 });
    expect(r.stopped).toBe("timeout");
    expect(r.output).toMatch(/Resource temporarily unavailable|retry/);
    expect((await run(executor, "echo alive")).output).toBe("alive\n");
  }, 60_000);

  it("recreates the container when it is gone", async () => {
    const { containerName } = await import("./docker-executor.js");
    const Dockerode = (await import("dockerode")).default;
    await new Dockerode({ socketPath: engine!.socketPath }).getContainer(containerName(dirs.channelA)).remove({ force: true });
    expect((await run(executor, "echo back")).output).toBe("back\n");
  }, 60_000);
});
