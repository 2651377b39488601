import { describe, expect, it } from "@jest/globals";
import { PassThrough } from "node:stream";
import { createLogger, serviceLogger } from "./index.js";

function capture(): { stream: PassThrough; lines: () => Record<string, unknown>[] } {
  const stream = new PassThrough();
  let text = "";
  stream.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
  return { stream, lines: () => text.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line)) };
}

describe("createLogger", () => {
  it("writes JSON lines with service and child bindings", async () => {
    const out = capture();
    const log = createLogger("agent-runner", { destination: out.stream });
    log.child({ channel: "cli/local", runId: "r1", msgId: "m1" }).info({ tokens: 3 }, "run started");
    await new Promise((r) => setImmediate(r));
    const [line] = out.lines();
    expect(line).toMatchObject({ service: "agent-runner", level: "info", channel: "cli/local", runId: "r1", msgId: "m1", tokens: 3, msg: "run started" });
    expect(typeof line!.time).toBe("string");
  });

  it("names the service once per line, also for the services `mom up` runs in one process", async () => {
    const out = capture();
    let text = "";
    out.stream.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    const mom = createLogger("mom", { destination: out.stream, level: "debug" });
    mom.info("up");
    serviceLogger(mom, "agent-runner").child({ channel: "cli/local" }).debug("run started");
    await new Promise((r) => setImmediate(r));
    const lines = text.trim().split("\n");
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line.match(/"service":/g)).toHaveLength(1);
    expect(out.lines()).toEqual([expect.objectContaining({ service: "mom", msg: "up" }), expect.objectContaining({ service: "agent-runner", channel: "cli/local", level: "debug" })]);
  });

  it("honours the level", async () => {
    const out = capture();
    const log = createLogger("scheduler", { destination: out.stream, level: "warn" });
    log.info("hidden");
    log.warn("shown");
    await new Promise((r) => setImmediate(r));
    expect(out.lines().map((l) => l.msg)).toEqual(["shown"]);
  });
});
