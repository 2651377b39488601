import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Bus } from "@mom/bus";
import { createLogger, loadConfig } from "@mom/config";
import { startTestNats, type TestNats } from "@mom/testing";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { busOptions } from "@mom/bus";
import { replayCommand } from "./replay-command.js";

describe("mom replay of a channel that does not exist", () => {
  let nats: TestNats;
  let dir: string;
  beforeAll(async () => {
    nats = await startTestNats();
    dir = mkdtempSync(join(tmpdir(), "mom-replay-"));
    writeFileSync(join(dir, "config.json"), JSON.stringify({ nats: { url: nats.url, namespace: nats.namespace } }));
    mkdirSync(join(dir, "workspace", "channels", "slack-acme", "C0A34FL8PMH"), { recursive: true });
    const bus = await Bus.connect(busOptions(loadConfig(dir), nats.url, "replay-test", createLogger("t", { level: "silent" })));
    await bus.provision();
    await bus.publish(bus.subjects.channel("in", { adapter: "cli", channelId: "local" }), { hello: 1 }, "m1");
    await bus.drain();
  });
  afterAll(async () => {
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("is an error that lists the channels there are (on the bus and in the workspace)", async () => {
    const lines: string[] = [];
    const err = await replayCommand("cli/locl", { data: dir }, (l) => lines.push(l)).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toBe(`no channel cli/locl on the bus or in ${join(dir, "workspace")}; channels: cli/local, slack-acme/C0A34FL8PMH`);
    expect(lines).toEqual([]);
  });

  it("replays a channel that exists", async () => {
    const lines: string[] = [];
    expect(await replayCommand("cli/local", { data: dir }, (l) => lines.push(l))).toBe(0);
    expect(lines[0]).toMatch(/^replay of cli\/local from the oldest message kept to now \(1 messages\)/);
  });
});
