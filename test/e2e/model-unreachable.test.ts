import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startFakeLlm, startTestNats, type TestNats } from "@mom/testing";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

// The model's server is down (the fake LLM stopped): `mom up` says so as it starts, without
// waiting for it, and the first message's error names the endpoint and what failed.
describe("mom up with a model nobody listens for", () => {
  let nats: TestNats;
  let dataDir: string;
  let baseUrl: string;
  beforeAll(async () => {
    nats = await startTestNats();
    const stopped = await startFakeLlm();
    baseUrl = stopped.baseUrl;
    const models = stopped.modelsJson();
    await stopped.close();
    dataDir = mkdtempSync(join(tmpdir(), "mom-up-deaf-"));
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(models));
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { namespace: nats.namespace } }));
  });
  afterAll(async () => {
    await nats.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("says which endpoint refuses at start, starts anyway, and the chat's error names it", async () => {
    const child = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "up", dataDir], { env: { ...process.env, NATS_URL: nats.url }, stdio: ["pipe", "pipe", "pipe"] });
    const out = new OutputCapture();
    child.stdout.setEncoding("utf8").on("data", out.write);
    child.stderr.setEncoding("utf8").on("data", out.write);
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      await out.waitFor("mom is up", 60_000);
      await out.waitFor(`mom: model fake/fake-model at ${baseUrl}: connection refused (ECONNREFUSED) — nothing listens there: start the server`, 15_000);
      child.stdin.write("hello\n");
      await out.waitFor(new RegExp(`✗ Error: Connection error: ECONNREFUSED — model fake/fake-model at ${baseUrl.replace(/[./]/g, "\\$&")}: connection refused — nothing listens there`), 45_000);
    } finally {
      child.stdin.end();
      await exited;
    }
  }, 120_000);
});
