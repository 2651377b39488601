import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startTestDockerEngine, type TestDockerEngine } from "@mom/testing";
import Dockerode from "dockerode";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { containerName } from "./docker-executor.js";
import { type ChannelSandbox, Sandbox } from "./sandbox.js";
import { makeDataDir, run } from "./test-support.js";

const started = await startTestDockerEngine();
const engine: TestDockerEngine | undefined = "engine" in started ? started.engine : undefined;
if (!engine) console.warn(`docker workspace-scope tests skipped: ${"skip" in started ? started.skip : ""}`);
const describeDocker = engine ? describe : describe.skip;

describeDocker(`docker executor, scope "workspace"${engine ? "" : " (skipped: no Docker engine could be started here)"}`, () => {
  const dirs = makeDataDir();
  let a: ChannelSandbox;
  let b: ChannelSandbox;
  let docker: Dockerode;

  beforeAll(async () => {
    const image = await engine!.importTestImage();
    const sandbox = new Sandbox({ type: "docker", image, socketPath: engine!.socketPath, maxOutputBytes: 1024 * 1024, maxProcesses: 128, scope: "workspace" }, dirs);
    a = sandbox.forChannel(dirs.channelA, [join(dirs.channelA, "log.jsonl")]);
    b = sandbox.forChannel(dirs.channelB, [join(dirs.channelB, "log.jsonl")]);
    docker = new Dockerode({ socketPath: engine!.socketPath });
  }, 120_000);
  afterAll(async () => {
    await engine?.stop();
    rmSync(dirs.dataDir, { recursive: true, force: true });
  }, 60_000);

  it("runs every channel's commands in one container, each in its own channel directory", async () => {
    // Both channels at once, before the container exists: created once, not twice.
    const [ra, rb] = await Promise.all([run(a.executor, "pwd; echo $HOME; hostname"), run(b.executor, "pwd; echo $HOME; hostname")]);
    const [pwdA, homeA, hostA] = ra.output.trim().split("\n");
    const [pwdB, homeB, hostB] = rb.output.trim().split("\n");
    expect([pwdA, homeA, pwdB, homeB]).toEqual([dirs.channelA, dirs.channelA, dirs.channelB, dirs.channelB]);
    expect(hostA).toBe(hostB);
    const containers = await docker.listContainers({ all: true });
    expect(containers.map((c) => c.Names[0])).toEqual([`/${containerName(dirs.workspaceDir, "workspace")}`]);
    expect(containers[0]!.Labels["mom.scope"]).toBe("workspace");
  }, 60_000);

  it("shares the channels with each other in bash (the documented trade), hides the data dir, keeps the workspace read-only; the file tools stay per channel", async () => {
    const r = await run(
      b.executor,
      `echo from-b > ${dirs.channelA}/note.txt; cat ${dirs.channelA}/note.txt; cat ${dirs.dataDir}/config.json; echo evil > ${dirs.workspaceDir}/tools/x/index.mjs`,
    );
    expect(r.output).toContain("from-b\n");
    expect(r.output).not.toContain("xoxb-config-secret");
    expect(r.output).toMatch(/Read-only file system/);
    expect(readFileSync(join(dirs.workspaceDir, "tools/x/index.mjs"), "utf8")).toBe("export default {};\n");
    await expect(a.files.readFile(join(dirs.channelB, "log.jsonl"))).rejects.toThrow(/not visible/);
    expect((await a.files.readFile(join(dirs.channelA, "note.txt"))).toString()).toBe("from-b\n");
    expect(b.description).toMatch(/one container shared by every channel/);
  }, 60_000);

  it("ends one channel's background processes with its command and leaves another channel's command running", async () => {
    const slow = run(b.executor, "sleep 2; echo b-finished");
    const r = await run(a.executor, "setsid sleep 777 & echo a-done");
    expect(r.output).toBe("a-done\n");
    expect((await slow).output).toBe("b-finished\n");
    expect((await run(b.executor, "ps | grep -c 'sleep 77[7]' || true")).output.trim()).toBe("0");
  }, 60_000);

  it("recreates the shared container when it is gone", async () => {
    await docker.getContainer(containerName(dirs.workspaceDir, "workspace")).remove({ force: true });
    expect((await run(a.executor, "echo back")).output).toBe("back\n");
  }, 60_000);
});
