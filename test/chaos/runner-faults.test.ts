// The scale-out rules one at a time, each with its own cluster of `mom runner` processes:
// fair shares and a joining replica, resuming a killed run with its receipts, resuming one in a
// channel with a long log without reading it whole, a poison message, and a long NATS outage.
import { afterEach, describe, expect, it } from "@jest/globals";
import type { FakeRequest } from "@mom/testing";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { answer, answering, expectExactlyOnceInOrder, RunnerCluster } from "../support/runner-cluster.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(2, "0")}`);

function userTexts(req: FakeRequest): string[] {
  return req.messages.filter((m) => m.role === "user").map((m) => (typeof m.content === "string" ? m.content : m.content.map((x: { text?: string }) => x.text ?? "").join("")));
}

/** A channel log of `lines` earlier chat lines (none of them mom's), as a busy channel collects them; its size in bytes. */
function writeLongLog(file: string, lines: number): number {
  mkdirSync(dirname(file), { recursive: true });
  const day = Date.UTC(2025, 0, 1);
  const text = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({ id: `old-${i}`, date: new Date(day + i * 60_000).toISOString(), user: `U${i % 40}`, userName: `user${i % 40}`, text: `message ${i} of a busy channel, about as long as a chat line usually is`, attachments: [], isBot: false }),
  ).join("\n");
  writeFileSync(file, `${text}\n`);
  return statSync(file).size;
}

/** Bytes a process has read so far through read(2) and its kin, from files and sockets alike (Linux). */
function bytesRead(pid: number): number {
  const m = /^rchar: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, "utf8"));
  if (!m) throw new Error(`no rchar in /proc/${pid}/io`);
  return Number(m[1]);
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

  it("answer a message redelivered after its runner died once, in a channel of 120,000 lines, without reading the log whole", async () => {
    c = await RunnerCluster.start({ leaseSeconds: 3 });
    const cl = c;
    const logFile = join(cl.dataDir, "workspace/channels/cli/h0/log.jsonl");
    const logBytes = writeLongLog(logFile, 120_000);
    cl.llm.setFallback((req) => {
      const texts = userTexts(req);
      if (texts.some((t) => /q h0:1(?!\d)/.test(t)) && !texts.at(-1)?.includes("previous attempt at answering this message was interrupted")) return { hang: true };
      return answering(0, 10)(req);
    });
    await Promise.all([cl.addRunner(), cl.addRunner()]);
    // Both replicas run the model once first, so what they read next is the channel, not code loaded on first use.
    const warm = ["w0", "w1", "w2", "w3"];
    for (const ch of warm) await cl.publish(ch, 1);
    await cl.waitForAnswers(4, 20_000);
    expect(new Set(await Promise.all(warm.map((ch) => cl.ownerOf(ch)))).size).toBe(2);

    await cl.publish("h0", 1);
    await until("the first attempt has started and asked the model", () => cl.eventsOf("h0").some((e) => e.event.type === "run_started") && cl.llm.requests.some((r) => userTexts(r).some((t) => /q h0:1(?!\d)/.test(t))), 20_000);
    const owner = (await cl.ownerOf("h0"))!;
    const survivor = cl.runners.find((r) => r.name !== owner)!;
    const before = bytesRead(survivor.child.pid!);
    cl.runner(owner).child.kill("SIGKILL");
    await cl.waitForAnswers(5, 30_000);
    const read = bytesRead(survivor.child.pid!) - before;

    expect(await cl.ownerOf("h0")).toBe(survivor.name);
    const events = cl.eventsOf("h0");
    const first = events.find((e) => e.event.type === "run_started")!;
    expect(events.find((e) => e.runId === first.runId && e.event.type === "run_ended")?.event).toMatchObject({ stopReason: "aborted" });
    expect(events.find((e) => e.event.type === "run_started" && e.runId !== first.runId)?.event).toMatchObject({ resumedFrom: first.runId });
    // Everything the survivor read while taking the channel over and answering (files and sockets):
    // the log's tail and the session, about 2 MB, where one whole read of the log is 24 MB.
    expect(read).toBeLessThan(logBytes / 4);
    expectExactlyOnceInOrder(cl, ["h0"], 1);
    const logged = readFileSync(logFile, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { id: string; isBot: boolean });
    expect(logged.length).toBe(120_000 + 2);
    expect(logged.slice(-2).map((e) => [e.id, e.isBot])).toEqual([["h0-1", false], [expect.any(String), true]]);
  }, 90_000);

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
