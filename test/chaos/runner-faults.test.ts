// The scale-out rules one at a time, each with its own cluster of `mom runner` processes:
// fair shares and a joining replica, resuming a killed run with its receipts, a poison message,
// and a long NATS outage.
import { afterEach, describe, expect, it } from "@jest/globals";
import type { FakeRequest } from "@mom/testing";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { answer, answering, expectExactlyOnceInOrder, RunnerCluster } from "../support/runner-cluster.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(2, "0")}`);

function userTexts(req: FakeRequest): string[] {
  return req.messages.filter((m) => m.role === "user").map((m) => (typeof m.content === "string" ? m.content : m.content.map((x: { text?: string }) => x.text ?? "").join("")));
}

async function until(what: string, ok: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await sleep(200);
  }
}

describe("runner replicas", () => {
  let c: RunnerCluster | undefined;
  afterEach(async () => {
    await c?.stop();
    c = undefined;
  });

  it("spread 64 channels within ±25% of a fair share, and a joining replica takes its share within 10 s", async () => {
    c = await RunnerCluster.start({ leaseSeconds: 3 });
    c.llm.setFallback(answering(0, 50));
    await Promise.all([c.addRunner(), c.addRunner(), c.addRunner()]);
    const channels = names("b", 64);
    await Promise.all(channels.map((ch) => c!.publish(ch, 1)));
    await c.waitForAnswers(64, 30_000);
    const within = (loads: number[], runners: number) => loads.every((n) => Math.abs(n - 64 / runners) <= 0.25 * (64 / runners));
    await until("an even spread over 3", async () => within([...(await c!.loads()).values()], 3), 10_000);

    await c.addRunner();
    const joined = Date.now();
    await until("an even spread over 4", async () => {
      const loads = [...(await c!.loads()).values()];
      return loads.length === 4 && within(loads, 4);
    }, 10_000);
    expect(Date.now() - joined).toBeLessThan(10_000);
    // Every channel still answers, once, wherever it went.
    await Promise.all(channels.map((ch) => c!.publish(ch, 2)));
    await c.waitForAnswers(128, 30_000);
    expectExactlyOnceInOrder(c, channels, 2);
  }, 90_000);

  it("resume a run whose runner was killed, telling it what the first attempt did", async () => {
    c = await RunnerCluster.start({ leaseSeconds: 3 });
    const cl = c;
    cl.llm.setFallback((req) => {
      const texts = userTexts(req);
      if (texts.at(-1)?.includes("previous attempt at answering this message was interrupted")) return { text: answer("k0", 1) };
      if (req.messages.some((m) => m.role === "tool")) return { hang: true }; // the first attempt, after its tool ran
      return { toolCalls: [{ name: "bash", arguments: { label: "Record it", command: "echo did-it >> side-effect.txt" } }] };
    });
    await Promise.all([cl.addRunner(), cl.addRunner()]);
    await cl.publish("k0", 1);
    await cl.llm.waitForRequests(2, 20_000);
    const owner = (await cl.ownerOf("k0"))!;
    cl.runner(owner).child.kill("SIGKILL");
    await cl.waitForAnswers(1, 30_000);

    const resumed = cl.llm.requests.at(-1)!;
    const note = userTexts(resumed).at(-1)!;
    expect(note).toMatch(/bash \(call [^)]+\): succeeded/);
    const dir = join(cl.dataDir, "workspace/channels/cli/k0");
    expect(readFileSync(join(dir, "side-effect.txt"), "utf8")).toBe("did-it\n");
    const events = cl.eventsOf("k0");
    const first = events.find((e) => e.event.type === "run_started")!;
    expect(events.find((e) => e.runId === first.runId && e.event.type === "run_ended")?.event).toMatchObject({ stopReason: "aborted", errorMessage: expect.stringContaining("interrupted") });
    expect(events.find((e) => e.event.type === "run_started" && e.runId !== first.runId)?.event).toMatchObject({ resumedFrom: first.runId });
    expectExactlyOnceInOrder(cl, ["k0"], 1);
  }, 60_000);

  it("set aside a message that keeps killing its runner, and carry on", async () => {
    c = await RunnerCluster.start({ leaseSeconds: 3, maxCrashes: 2 });
    const cl = c;
    cl.llm.setFallback(async (req) => {
      // The message being answered is the newest chat line (a resumed run's last turn is mom's note).
      const current = userTexts(req).filter((t) => t.includes("[@")).at(-1) ?? "";
      if (current.includes("boom")) {
        // What an out-of-memory tool call does to its runner.
        const owner = await cl.ownerOf("p0");
        if (owner) cl.runner(owner).child.kill("SIGKILL");
        return { hang: true };
      }
      return answering(0, 10)(req);
    });
    await Promise.all([cl.addRunner(), cl.addRunner(), cl.addRunner()]);
    await cl.publish("p0", 1, "boom");
    await cl.publish("p1", 1);
    await until("the channel is told", () => cl.eventsOf("p0").some((e) => e.event.type === "run_ended" && /set aside: 2 attempts/.test(e.event.errorMessage ?? "")), 40_000);
    await cl.publish("p0", 2);
    await until("the next message is answered", () => (cl.answers().get("p0") ?? []).some((a) => a.text === answer("p0", 2)), 20_000);
    expect(cl.answers().get("p1")?.map((a) => a.text)).toEqual([answer("p1", 1)]);
    const letters: unknown[] = [];
    const reading = cl.bus.follow({ stream: "DLQ", filterSubject: cl.bus.subjects.dlq("agent-runner"), from: 1, schema: (await import("@mom/contracts")).DeadLetter, handler: (d) => void letters.push(d.data) });
    await until("the dead letter", () => letters.length > 0, 5000);
    reading.stop();
    expect(letters[0]).toMatchObject({ stage: "agent-runner", reason: expect.stringContaining("set aside: 2 attempts"), payload: expect.stringContaining("boom") });
  }, 90_000);

  it("deliver an abort on mom.ctl and a typed stop to whichever replica owns the channel", async () => {
    c = await RunnerCluster.start({ leaseSeconds: 3 });
    const cl = c;
    cl.llm.setFallback((req) => {
      const current = userTexts(req).filter((t) => t.includes("[@")).at(-1) ?? "";
      return /q s\d:1(?!\d)/.test(current) ? { hang: true } : answering(0, 10)(req);
    });
    await Promise.all([cl.addRunner(), cl.addRunner()]);
    // Four channels, so that both replicas own some.
    for (const ch of ["s0", "s1", "s2", "s3"]) await cl.publish(ch, 1);
    await cl.llm.waitForRequests(4, 20_000);
    expect(new Set(await Promise.all(["s0", "s1", "s2", "s3"].map((ch) => cl.ownerOf(ch)))).size).toBe(2);
    for (const ch of ["s0", "s1"]) {
      await cl.bus.publish(cl.bus.subjects.channel("ctl", { adapter: "cli", channelId: ch }), { type: "abort", ts: new Date().toISOString(), requestedBy: { id: "U1", username: "alice" } }, `abort-${ch}`);
    }
    for (const ch of ["s2", "s3"]) await cl.publish(ch, 9, "stop");
    await until("every hanging run aborted", () => ["s0", "s1", "s2", "s3"].every((ch) => cl.eventsOf(ch).some((e) => e.event.type === "run_ended" && e.event.stopReason === "aborted")), 10_000);
    for (const ch of ["s0", "s1", "s2", "s3"]) await cl.publish(ch, 2);
    await until("the next mentions answered", () => ["s0", "s1", "s2", "s3"].every((ch) => (cl.answers().get(ch) ?? []).some((a) => a.text === answer(ch, 2))), 20_000);
  }, 60_000);

  it("lose nothing and answer nothing twice through a 35 s NATS outage", async () => {
    c = await RunnerCluster.start({ leaseSeconds: 4 });
    c.llm.setFallback(answering(300, 600));
    await Promise.all([c.addRunner(), c.addRunner()]);
    const channels = names("o", 10);
    for (const ch of channels) await c.publish(ch, 1);
    for (const ch of channels) await c.publish(ch, 2);
    await c.llm.waitForRequests(3, 20_000);
    await c.nats.restart!(35_000);
    for (const ch of channels) await c.publish(ch, 3);
    await c.waitForAnswers(30, 60_000);
    await sleep(2000);
    expectExactlyOnceInOrder(c, channels, 3);
  }, 150_000);
});
