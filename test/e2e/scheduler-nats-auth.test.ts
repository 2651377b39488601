import { afterAll, describe, expect, it } from "@jest/globals";
import { findNatsServer, freePort } from "@mom/testing";
import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

// deploy/nats/auth.conf has a `scheduler` user (publish on mom.in.>, provisioning, its DLQ stage).
// This runs the real `mom scheduler` as that user against the committed NATS config and fails on
// any permission violation (deploy/nats/verify-permissions.sh does the same for runner and ingress).
describe("mom scheduler as the least-privilege NATS user", () => {
  const tmp = mkdtempSync(join(tmpdir(), "mom-sched-auth-"));
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const c of children) c.kill("SIGKILL");
    rmSync(tmp, { recursive: true, force: true });
  });

  it("fires an event and reports a bad file without a permission violation or a leaked password", async () => {
    const bin = findNatsServer();
    if (!bin) throw new Error("nats-server not found (apt-get install -y nats-server)");
    const [port, mport] = [await freePort(), await freePort()];
    mkdirSync(join(tmp, "conf"));
    for (const f of ["nats-server.conf", "auth.conf"]) copyFileSync(join(root, "deploy/nats", f), join(tmp, "conf", f));
    writeFileSync(
      join(tmp, "conf", "test.conf"),
      `include ./nats-server.conf\ninclude ./auth.conf\nhost: 127.0.0.1\nport: ${port}\nhttp_port: ${mport}\njetstream { store_dir: "${join(tmp, "js")}", max_memory_store: 64MB, max_file_store: 1GB }\n`,
    );
    const password = `s${Math.random().toString(36).slice(2)}`;
    const natsLog = new OutputCapture();
    const nats = spawn(bin, ["-c", join(tmp, "conf", "test.conf")], {
      env: { ...process.env, MOM_RUNNER_PASSWORD: "r-unused", MOM_INGRESS_CLI_PASSWORD: "i-unused", MOM_INGRESS_MATRIX_PASSWORD: "m-unused", MOM_INGRESS_EMAIL_PASSWORD: "e-unused", MOM_SCHEDULER_PASSWORD: password, MOM_CONSOLE_PASSWORD: "c-unused" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(nats);
    nats.stdout!.setEncoding("utf8").on("data", natsLog.write);
    nats.stderr!.setEncoding("utf8").on("data", natsLog.write);
    await natsLog.waitFor("Server is ready", 10_000);

    const dataDir = join(tmp, "data");
    mkdirSync(join(dataDir, "workspace", "channels", "cli", "local"), { recursive: true });
    mkdirSync(join(dataDir, "workspace", "events"), { recursive: true });
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ nats: { url: `nats://127.0.0.1:${port}` }, scheduler: { pollIntervalMs: 200 } }));
    writeFileSync(join(dataDir, "workspace", "events", "hello.json"), JSON.stringify({ type: "immediate", channelId: "cli/local", text: "hello" }));
    writeFileSync(join(dataDir, "workspace", "events", "bad.json"), JSON.stringify({ type: "sometimes", channelId: "cli/local", text: "x" }));

    const err = new OutputCapture();
    const sched = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "scheduler", dataDir], {
      env: { ...process.env, NATS_URL: `nats://scheduler:${password}@127.0.0.1:${port}` },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(sched);
    sched.stderr!.setEncoding("utf8").on("data", err.write);
    sched.stdout!.setEncoding("utf8").on("data", err.write);
    const exited = new Promise<number | null>((r) => sched.once("exit", (code) => r(code)));
    await err.waitFor('"msg":"event fired"', 30_000);
    await err.waitFor('"msg":"reported in the channel"', 10_000);
    sched.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(err.text).toContain('"msg":"bus drained"');
    expect(err.text).not.toMatch(/"level":"error"/);
    expect(natsLog.text).not.toMatch(/Violation/);
    expect(err.text).not.toContain(password);
  }, 60_000);
});
