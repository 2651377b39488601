// The scale-out promise under faults: 3 runner processes share 50 channels while one is killed
// with SIGKILL, NATS restarts, another gets SIGTERM and a new one joins. Every mention must be
// answered exactly once, in order per channel, with no two runs of a channel overlapping and one
// copy of each message in log.jsonl and context.jsonl.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { answer, answering, question, RunnerCluster } from "../support/runner-cluster.js";

const CHANNELS = 50;
const PER_CHANNEL = 20;
const TOTAL = CHANNELS * PER_CHANNEL;
const channel = (i: number) => `c${String(i).padStart(2, "0")}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("runner replicas under kill -9, NATS restart, SIGTERM and a joining replica", () => {
  let c: RunnerCluster;
  beforeAll(async () => {
    c = await RunnerCluster.start();
    c.llm.setFallback(answering(200, 500));
    await Promise.all([c.addRunner(), c.addRunner(), c.addRunner()]);
  }, 60_000);
  afterAll(async () => {
    await c?.stop();
  });

  it("answers every mention once, in order, without overlapping runs", async () => {
    // 1,000 mentions over ~40 s, round-robin over the channels, while the faults happen.
    const publishing = (async () => {
      for (let n = 1; n <= PER_CHANNEL; n++) {
        for (let i = 0; i < CHANNELS; i++) await c.publish(channel(i), n);
        await sleep(2000);
      }
    })();
    const [a, b] = c.runners;
    await sleep(6000);
    a!.child.kill("SIGKILL");
    await sleep(6000);
    await c.nats.restart!();
    await sleep(6000);
    b!.child.kill("SIGTERM");
    await sleep(2000);
    await c.addRunner();
    await publishing;
    expect(await b!.exited).toBe(0);
    await c.waitForAnswers(TOTAL, 120_000);
    await sleep(2000); // anything answered twice would show up now

    const answers = c.answers();
    for (let i = 0; i < CHANNELS; i++) {
      const ch = channel(i);
      const got = (answers.get(ch) ?? []).map((x) => x.text);
      // Exactly one answer per mention, in the order they were sent: nothing lost, nothing twice.
      expect(got).toEqual(Array.from({ length: PER_CHANNEL }, (_, k) => answer(ch, k + 1)));
    }

    // One run at a time per channel: after a run_started, the next lifecycle event of that
    // channel is the end of the same run.
    const open = new Map<string, string>();
    for (const { channel: ch, e } of c.events) {
      if (e.event.type === "run_started") {
        expect({ ch, overlapping: open.get(ch) }).toEqual({ ch, overlapping: undefined });
        open.set(ch, e.runId);
      } else if (e.event.type === "run_ended" && open.get(ch) === e.runId) open.delete(ch);
    }

    for (let i = 0; i < CHANNELS; i++) {
      const dir = join(c.dataDir, "workspace/channels/cli", channel(i));
      const log = readFileSync(join(dir, "log.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
      const ids = log.map((e) => e.id);
      expect(new Set(ids).size).toBe(ids.length);
      const replies = log.filter((e) => e.isBot).map((e) => e.text);
      expect(replies).toEqual(Array.from({ length: PER_CHANNEL }, (_, k) => answer(channel(i), k + 1)));
      // context.jsonl: one session, and each mention exactly once as a user turn.
      expect(existsSync(join(dir, "context.jsonl"))).toBe(true);
      const ctx = readFileSync(join(dir, "context.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
      expect(ctx.filter((e) => e.type === "session")).toHaveLength(1);
      const userText = ctx
        .filter((e) => e.type === "message" && e.message.role === "user")
        .map((e) => (e.message.content as { text?: string }[]).map((x) => x.text ?? "").join(""));
      for (let n = 1; n <= PER_CHANNEL; n++) {
        const q = question(channel(i), n);
        const once = new RegExp(`${q}(?!\\d)`);
        expect({ q, copies: userText.filter((t) => once.test(t)).length }).toEqual({ q, copies: 1 });
      }
    }
  }, 240_000);
});
