import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startFakeLlm, type FakeLlm } from "@mom/testing";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const mom = join(root, "services/cli/bin/mom.js");

function momRun(args: string[]): Promise<{ code: number | null; out: string }> {
  const env = { ...process.env };
  delete env.NATS_URL;
  const child = spawn(process.execPath, [mom, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (t: string) => (out += t));
  child.stderr.setEncoding("utf8").on("data", (t: string) => (out += t));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, out })));
}

// Every command finds the NATS that `mom up` started for the data dir (data/nats/url), never a
// server that happens to listen on 127.0.0.1:4222.
describe("commands against a running `mom up` use its NATS", () => {
  let llm: FakeLlm;
  let dataDir: string;
  beforeAll(async () => {
    llm = await startFakeLlm();
    dataDir = mkdtempSync(join(tmpdir(), "mom-up-commands-"));
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
    // A namespace of its own: whatever another server holds cannot pass for this data dir's.
    const namespace = `up${process.pid}`;
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { namespace }, auth: { order: { fake: ["a", "b"] } } }));
    const profiles = [
      { id: "a", provider: "fake", type: "api_key", secret: "key-a-0123456789" },
      { id: "b", provider: "fake", type: "api_key", secret: "key-b-0123456789" },
    ];
    writeFileSync(join(dataDir, "auth-profiles.json"), JSON.stringify({ profiles }), { mode: 0o600 });
  });
  afterAll(async () => {
    await llm.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("mom usage, mom auth list and mom doctor show what this `mom up` recorded", async () => {
    llm.byKey("key-a-0123456789", { error: { status: 429, message: "Rate limit reached", retryAfterSeconds: 600 } });
    llm.enqueue({ text: "answered with b" });
    const env = { ...process.env };
    delete env.NATS_URL;
    const up = spawn(process.execPath, [mom, "up", dataDir], { env, stdio: ["pipe", "pipe", "pipe"] });
    const out = new OutputCapture();
    up.stdout.setEncoding("utf8").on("data", out.write);
    up.stderr.setEncoding("utf8").on("data", out.write);
    const exited = new Promise<number | null>((r) => up.once("exit", (code) => r(code)));
    try {
      await out.waitFor("mom is up", 60_000);
      const natsUrl = /NATS (nats:\/\/[\d.:]+)/.exec(out.text)![1]!;
      up.stdin.write("hello\n");
      await out.waitForAnswer("answered with b", 30_000);

      const usage = await momRun(["usage", "--data", dataDir]);
      expect(usage.out).toMatch(/cli\/local\s+\d+\s/);
      expect(usage.out).not.toContain("no model calls recorded");

      const auth = await momRun(["auth", "list", "--data", dataDir]);
      expect(auth.out).toMatch(/1\. a .*cooling down until/);
      expect(auth.out).toMatch(/2\. b .*last used/);
      expect(auth.out).not.toContain("cooldowns not shown");

      const doctor = await momRun(["doctor", dataDir]);
      expect(doctor.out).toContain(`✓ NATS: the running \`mom up\`'s own NATS, ${natsUrl} reachable`);
      expect(doctor.out).not.toMatch(/runners alive: none/);
      expect(doctor.out).toMatch(/retention: .*\d+ messages/);
      for (const o of [usage.out, auth.out, doctor.out]) expect(o).not.toContain(":4222");
    } finally {
      up.stdin.end();
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 15_000))]);
      if (code === "timeout") up.kill("SIGKILL");
    }
    expect(await exited).toBe(0);
  }, 120_000);
});
