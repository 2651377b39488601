import { afterAll, describe, expect, it } from "@jest/globals";
import { Bus } from "@mom/bus";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findNatsServerBinary, startLocalNats } from "./local-nats.js";

describe("mom up's local NATS", () => {
  const dir = mkdtempSync(join(tmpdir(), "mom-localnats-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("starts JetStream on loopback with its store under the data dir, and stops", async () => {
    const nats = await startLocalNats(dir);
    try {
      expect(nats.url).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
      const bus = await Bus.connect({ url: nats.url, name: "local-nats-test", namespace: "mom" });
      await bus.provision();
      expect((await bus.accountInfo()).streams).toBeGreaterThanOrEqual(5);
      await bus.drain();
      expect(existsSync(join(dir, "nats", "jetstream"))).toBe(true);
    } finally {
      await nats.stop();
    }
    await expect(Bus.connect({ url: nats.url, name: "after-stop" })).rejects.toThrow();
  });

  it("stops a nats-server left running on the store by a `mom up` that was killed, before starting its own", async () => {
    const store = join(dir, "nats");
    mkdirSync(store, { recursive: true });
    const pidFile = join(store, "nats-server.pid");
    const orphan = spawn(findNatsServerBinary()!, ["-a", "127.0.0.1", "-p", "-1", "-js", "-sd", store, "-P", pidFile], { stdio: "ignore" });
    const gone = new Promise((r) => orphan.once("exit", r));
    // The previous test's server may have left its pid file: wait for this server's own pid in it.
    const named = () => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() === String(orphan.pid);
    while (!named()) await new Promise((r) => setTimeout(r, 25));
    const nats = await startLocalNats(dir);
    try {
      expect(nats.orphanStopped).toBe(orphan.pid);
      await gone;
      const bus = await Bus.connect({ url: nats.url, name: "after-orphan", namespace: "mom" });
      await bus.provision();
      await bus.drain();
    } finally {
      await nats.stop();
    }
  });
});
