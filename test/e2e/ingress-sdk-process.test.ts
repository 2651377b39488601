import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { spawnNatsServer, type TestNats } from "@mom/testing";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";

// The SDK's runIngress, as an outside author's ingress runs it: a SIGTERM while it starts (a
// rollout) stops it once it is up, with exit code 0, instead of Node's default action killing it
// mid-start with nothing closed.
describe("runIngress (an ingress deployed on its own)", () => {
  let nats: TestNats;
  let dataDir: string;
  beforeAll(async () => {
    nats = await spawnNatsServer();
    dataDir = mkdtempSync(join(tmpdir(), "mom-sdk-process-"));
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ nats: { url: nats.url, namespace: nats.namespace }, adapters: { slow: { type: "external", platform: "slow", settings: {} } } }));
  });
  afterAll(async () => {
    await nats?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("a SIGTERM while it starts stops it once it is up, and it exits 0", async () => {
    const child = spawn(process.execPath, [fileURLToPath(new URL("../support/slow-start-ingress.mjs", import.meta.url)), "--adapter", "slow", "--data-dir", dataDir], { stdio: ["ignore", "pipe", "pipe"] });
    const out = new OutputCapture();
    child.stdout.setEncoding("utf8").on("data", out.write);
    child.stderr.setEncoding("utf8").on("data", out.write);
    const exited = new Promise<number | string>((r) => child.once("exit", (code, signal) => r(code ?? String(signal))));
    await out.waitFor("connecting", 30_000);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    // Heard at once, acted on once it was up.
    expect(out.text).toMatch(/"signal":"SIGTERM".*"msg":"stopping"[\s\S]*"msg":"slow ingress receiving"/);
  }, 60_000);
});
