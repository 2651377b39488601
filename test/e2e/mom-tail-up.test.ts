import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startFakeLlm, type FakeLlm } from "@mom/testing";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const mom = join(root, "services/cli/bin/mom.js");

function start(args: string[]): { child: ChildProcess; out: OutputCapture; exited: Promise<number | null> } {
  const env = { ...process.env };
  delete env.NATS_URL;
  const child = spawn(process.execPath, [mom, ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
  const out = new OutputCapture();
  child.stdout!.setEncoding("utf8").on("data", out.write);
  child.stderr!.setEncoding("utf8").on("data", out.write);
  return { child, out, exited: new Promise((r) => child.once("exit", (code) => r(code))) };
}

// `mom tail` beside `mom up` on one data dir: the tail never holds the data dir, follows each
// `mom up` that runs there, and says so when one quits.
describe("mom tail follows mom up", () => {
  let llm: FakeLlm;
  let dataDir: string;
  beforeAll(async () => {
    llm = await startFakeLlm();
    dataDir = mkdtempSync(join(tmpdir(), "mom-tail-up-"));
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { namespace: `tailup${process.pid}` } }));
    // What an earlier `mom up` leaves: a JetStream store under the data dir.
    mkdirSync(join(dataDir, "nats", "jetstream"), { recursive: true });
  });
  afterAll(async () => {
    await llm.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("with tail open mom up still starts; tail shows its traffic, says disconnected when it quits, follows the next one", async () => {
    const tail = start(["tail", "--data", dataDir]);
    const ups: ReturnType<typeof start>[] = [];
    try {
      await tail.out.waitFor("waiting for `mom up`", 30_000);

      const up = start(["up", dataDir]);
      ups.push(up);
      await up.out.waitFor("mom is up", 60_000);
      expect(up.out.text).not.toContain("is in use by another");
      await tail.out.waitFor("tailing every channel", 30_000);
      llm.enqueue({ text: "first answer" });
      up.child.stdin!.write("hello tail\n");
      await tail.out.waitFor("mom: first answer", 30_000);

      up.child.stdin!.end();
      expect(await up.exited).toBe(0);
      await tail.out.waitFor(/disconnected: `mom up` on \S+ quit/, 5000);
      expect(tail.child.exitCode).toBe(null);

      const again = start(["up", dataDir]);
      ups.push(again);
      await again.out.waitFor("mom is up", 60_000);
      // tail reads new messages from when it is back on: the message goes in once it says so.
      await tail.out.waitFor(/tailing every channel[\s\S]*tailing every channel/, 30_000);
      llm.enqueue({ text: "second answer" });
      again.child.stdin!.write("again\n");
      await tail.out.waitFor("mom: second answer", 30_000);
      again.child.stdin!.end();
      expect(await again.exited).toBe(0);
    } finally {
      for (const u of ups) if (u.child.exitCode === null) u.child.kill("SIGKILL");
      tail.child.kill("SIGTERM");
    }
    expect(await tail.exited).toBe(0);
  }, 180_000);
});
