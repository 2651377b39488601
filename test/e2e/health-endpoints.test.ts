import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { freePort, spawnNatsServer, startFakeLlm, type FakeLlm, type TestNats } from "@mom/testing";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";
import { sample } from "../support/prometheus.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.text() };
}

/** Polls an endpoint until it answers `status` (the condition, not a time, is what the test asserts). */
async function until(port: number, path: string, status: number, timeoutMs: number): Promise<{ status: number; body: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await get(port, path).catch(() => ({ status: 0, body: "" }));
    if (r.status === status) return r;
    if (Date.now() > deadline) throw new Error(`${path} still answers ${r.status} ${r.body}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

describe("mom runner's /healthz, /readyz and /metrics (MOM_HTTP_PORT)", () => {
  let nats: TestNats;
  let llm: FakeLlm;
  let dataDir: string;
  let child: ChildProcess | undefined;
  beforeAll(async () => {
    // Spawned (never NATS_URL): the test stops and restarts this server.
    nats = await spawnNatsServer();
    llm = await startFakeLlm();
    dataDir = mkdtempSync(join(tmpdir(), "mom-health-"));
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { url: nats.url, namespace: nats.namespace }, observability: { httpPort: 1 } }));
  });
  afterAll(async () => {
    child?.kill("SIGKILL");
    await llm.close();
    await nats.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("is live at once, ready once started, not ready while NATS is down and ready again after it is back", async () => {
    const port = await freePort();
    const env = { ...process.env, MOM_HTTP_PORT: String(port) }; // wins over observability.httpPort
    delete env.NATS_URL;
    child = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "runner", dataDir], { env, stdio: ["ignore", "pipe", "pipe"] });
    const err = new OutputCapture();
    child.stderr!.setEncoding("utf8").on("data", err.write);
    await err.waitFor("agent runner ready", 30_000);

    expect(await get(port, "/healthz")).toEqual({ status: 200, body: '{"status":"ok"}\n' });
    expect(await until(port, "/readyz", 200, 10_000)).toEqual({ status: 200, body: '{"status":"ready"}\n' });
    const metrics = await get(port, "/metrics");
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain("# TYPE mom_runs_total counter");
    expect(metrics.body).toContain("# TYPE mom_run_duration_seconds histogram");
    expect(sample(metrics.body, "mom_queue_depth")).toBe(0);
    expect(metrics.body).toContain("mom_process_resident_memory_bytes");

    const restarted = nats.restart(3000);
    const down = await until(port, "/readyz", 503, 10_000);
    expect(JSON.parse(down.body)).toEqual({ status: "not ready", reason: expect.stringMatching(/^agent-runner: (NATS disconnected; reconnecting|consumer .* not bound; retrying)$/) });
    expect((await get(port, "/healthz")).status).toBe(200);
    await restarted;
    await until(port, "/readyz", 200, 30_000);

    const exited = new Promise<number | null>((r) => child!.once("exit", (code) => r(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  }, 90_000);

  it("refuses a taken port in one line", async () => {
    const port = await freePort();
    const blocker = spawn(process.execPath, ["-e", `require("node:http").createServer().listen(${port}, "0.0.0.0", () => console.log("listening"))`], { stdio: ["ignore", "pipe", "ignore"] });
    const out = new OutputCapture();
    blocker.stdout!.setEncoding("utf8").on("data", out.write);
    await out.waitFor("listening");
    try {
      const env = { ...process.env, MOM_HTTP_PORT: String(port) };
      delete env.NATS_URL;
      const p = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "scheduler", dataDir], { env, stdio: ["ignore", "ignore", "pipe"] });
      const err = new OutputCapture();
      p.stderr!.setEncoding("utf8").on("data", err.write);
      const code = await new Promise<number | null>((r) => p.once("exit", (c) => r(c)));
      expect(code).toBe(1);
      expect(err.text).toBe(`mom: HTTP port ${port} is in use (MOM_HTTP_PORT / observability.httpPort)\n`);
    } finally {
      blocker.kill("SIGKILL");
    }
  }, 30_000);
});
