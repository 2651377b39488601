import { afterAll, describe, expect, it } from "@jest/globals";
import { Bus } from "@mom/bus";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalNats } from "./local-nats.js";

describe("mom up's local NATS", () => {
  const dir = mkdtempSync(join(tmpdir(), "mom-localnats-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("starts JetStream on loopback with its store under the data dir, and stops", async () => {
    const nats = await startLocalNats(dir);
    try {
      expect(nats.url).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
      const bus = await Bus.connect({ url: nats.url, name: "local-nats-test", namespace: "mom" });
      await bus.provision();
      expect((await bus.jsm.getAccountInfo()).streams).toBeGreaterThanOrEqual(5);
      await bus.drain();
      expect(existsSync(join(dir, "nats", "jetstream"))).toBe(true);
    } finally {
      await nats.stop();
    }
    await expect(Bus.connect({ url: nats.url, name: "after-stop" })).rejects.toThrow();
  });
});
