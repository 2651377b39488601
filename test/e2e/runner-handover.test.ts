import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startStack, type Stack } from "../support/stack.js";

describe("runner shutdown mid-run hands the message to the next runner", () => {
  let s: Stack;
  beforeAll(async () => {
    // A run still going after the shutdown grace is handed over mid-run (docs/scaling.md).
    s = await startStack({ config: { runner: { shutdownGraceSeconds: 1 } } });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("hands the run over after the grace period, and the next runner resumes it; nothing is logged twice", async () => {
    s.llm.enqueue({ hang: true }, { text: "answered by the second runner" });
    s.type("a long task");
    await s.llm.waitForRequests(1);
    await s.runner!.close();
    await s.output.waitFor("another runner will answer this message");

    await s.startRunner();
    await s.output.waitForAnswer("answered by the second runner");

    const log = readFileSync(join(s.loaded.paths.workspaceDir, "channels/cli/local/log.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(log.map((e) => e.text)).toEqual(["a long task", "answered by the second runner"]);
  });
});

describe("a channel waiting to be handed over still hears `stop`", () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack({ config: { runner: { shutdownGraceSeconds: 60 } } });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("a typed stop ends the run the shutdown waits for, at once", async () => {
    s.llm.enqueue({ hang: true });
    s.type("a long task");
    await s.llm.waitForRequests(1);
    const started = Date.now();
    const closing = s.runner!.close(); // waits for the run (up to the 60 s grace) before handing over
    await new Promise((r) => setTimeout(r, 300));
    s.type("stop");
    await s.output.waitFor("■ Stopped");
    await closing;
    s.runner = undefined;
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(s.output.text).not.toContain("another runner will answer this message");
  });
});
