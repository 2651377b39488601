import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startFakeLlm, startTestNats, type FakeLlm, type TestNats } from "@mom/testing";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

describe("mom runner as a deployed process", () => {
  let nats: TestNats;
  let llm: FakeLlm;
  let dataDir: string;
  beforeAll(async () => {
    nats = await startTestNats();
    llm = await startFakeLlm();
    dataDir = mkdtempSync(join(tmpdir(), "mom-runner-proc-"));
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { url: nats.url, namespace: nats.namespace } }));
  });
  afterAll(async () => {
    await llm.close();
    await nats.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("logs pino JSON to stderr and drains and exits 0 on SIGTERM", async () => {
    const env = { ...process.env };
    delete env.NATS_URL;
    const child = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "runner", dataDir], { env, stdio: ["ignore", "pipe", "pipe"] });
    const err = new OutputCapture();
    child.stderr.setEncoding("utf8").on("data", err.write);
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    await err.waitFor("agent runner ready", 30_000);
    const ready = err.text.split("\n").find((l) => l.includes("agent runner ready"))!;
    expect(JSON.parse(ready)).toMatchObject({ service: "agent-runner", level: "info", model: "fake/fake-model" });
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(err.text).toContain("bus drained");
  }, 60_000);

  it("says at start, in one log line, that the model's endpoint refuses connections, and starts anyway", async () => {
    const stopped = await startFakeLlm();
    const models = stopped.modelsJson();
    await stopped.close();
    const deaf = mkdtempSync(join(tmpdir(), "mom-runner-deaf-"));
    writeFileSync(join(deaf, "models.json"), JSON.stringify(models));
    writeFileSync(join(deaf, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { url: nats.url, namespace: `${nats.namespace}-deaf` } }));
    const env = { ...process.env };
    delete env.NATS_URL;
    const child = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "runner", deaf], { env, stdio: ["ignore", "pipe", "pipe"] });
    const err = new OutputCapture();
    child.stderr.setEncoding("utf8").on("data", err.write);
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      await err.waitFor("connection refused", 30_000);
      expect(err.text).toContain("agent runner ready");
      const line = JSON.parse(err.text.split("\n").find((l) => l.includes("connection refused"))!);
      expect(line).toMatchObject({ level: "warn", model: "fake/fake-model", msg: expect.stringContaining(`model fake/fake-model at ${stopped.baseUrl}: connection refused (ECONNREFUSED) — nothing listens there`) });
    } finally {
      child.kill("SIGTERM");
      await exited;
      rmSync(deaf, { recursive: true, force: true });
    }
  }, 60_000);
});
