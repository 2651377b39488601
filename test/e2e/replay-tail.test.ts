import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Bus } from "@mom/bus";
import { createLogger } from "@mom/config";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";
import { startStack, type Stack } from "../support/stack.js";
import { connectionOf } from "../../libs/bus/src/bus.js"; // the NATS handles behind a Bus: tests and benches only

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const mom = join(root, "services/cli/bin/mom.js");

// Asynchronous: the fake LLM and the runner live in this process and must keep answering.
function momRun(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [mom, ...args], { env: { ...process.env, NATS_URL: "" }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (t: string) => (out += t));
  child.stderr.setEncoding("utf8").on("data", (t: string) => (err += t));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, out, err })));
}

// `mom replay` and `mom tail` as an operator runs them, against a live stack (real NATS, fake LLM).
describe("mom replay and mom tail", () => {
  let s: Stack;
  let tail: ReturnType<typeof spawn>;
  const tailOut = new OutputCapture();
  beforeAll(async () => {
    s = await startStack();
    tail = spawn(process.execPath, [mom, "tail", "cli", "--data", s.dataDir], { env: { ...process.env, NATS_URL: "" }, stdio: ["ignore", "pipe", "pipe"] });
    tail.stdout!.setEncoding("utf8").on("data", tailOut.write);
    tail.stderr!.setEncoding("utf8").on("data", tailOut.write);
    await tailOut.waitFor("tailing cli");

    s.llm.enqueue(
      { toolCalls: [{ name: "bash", arguments: { label: "Count the files", command: "echo 42" } }] },
      { text: "There are **42** files.", usage: { input: 120, output: 8 } },
    );
    s.type("how many files?");
    await s.output.waitFor("There are **42** files.");
    await s.output.waitFor(/\$\?/);
  }, 60_000);
  afterAll(async () => {
    tail?.kill("SIGTERM");
    await s?.stop();
  });

  it("tail shows the live traffic of an adapter as it is stored", async () => {
    await tailOut.waitFor(/run \w+ ended \(stop\)/);
    expect(tailOut.text).toMatch(/cli\/local {2}tester → mom: how many files\?/);
    expect(tailOut.text).toMatch(/run \w{8} started for tester \(model fake\/fake-model\)/);
    // The tool took what it took: "(850 ms)", or "(1.1 s)" on a busy machine.
    expect(tailOut.text).toMatch(/✓ Count the files \((\d+ ms|\d+(\.\d)? s)\)/);
    expect(tailOut.text).toContain("receipt tool.call.succeeded bash");
    expect(tailOut.text).toContain("mom: There are **42** files.");

    // a payload that breaks the contract: shown as it is stored, then the runner's dead letter
    await s.bus.publish(s.bus.subjects.channel("in", { adapter: "cli", channelId: "local" }), { bogus: true }, "bad-1");
    await tailOut.waitFor(/✗ dead letter from agent-runner \(\S+\.in\.cli\.local, msg-id bad-1\): /);
    expect(tailOut.text).toMatch(/cli\/local {2}\? \S+_IN #\d+: invalid payload \(/);
  });

  it("tail started before any service waits for the streams, then shows the traffic", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-tail-early-"));
    writeFileSync(join(dir, "config.json"), JSON.stringify({ nats: { url: s.nats.url, namespace: `${s.nats.namespace}-early` } }));
    const early = spawn(process.execPath, [mom, "tail", "--data", dir], { env: { ...process.env, NATS_URL: "" }, stdio: ["ignore", "pipe", "pipe"] });
    const seen = new OutputCapture();
    early.stdout!.setEncoding("utf8").on("data", seen.write);
    early.stderr!.setEncoding("utf8").on("data", seen.write);
    try {
      await seen.waitFor("waiting for mom's streams");
      const bus = await Bus.connect({ url: s.nats.url, name: "early", namespace: `${s.nats.namespace}-early`, logger: createLogger("early", { level: "silent" }) });
      await bus.provision();
      await seen.waitFor("tailing every channel");
      await bus.publish(bus.subjects.channel("in", { adapter: "cli", channelId: "x" }), { id: "e1", channelId: "x", timestamp: new Date().toISOString(), sender: { id: "u", username: "zoe", isBot: false }, text: "early bird", attachments: [], isMention: false }, "e1");
      await seen.waitFor("cli/x  zoe: early bird");
      await bus.drain();
    } finally {
      early.kill("SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("replays a channel in order, readable, without touching the live consumers", async () => {
    const consumersBefore = await connectionOf(s.bus).jsm.consumers.list(s.bus.subjects.stream("IN")).next();
    const r = await momRun(["replay", "cli/local", "--data", s.dataDir]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    const lines = r.out.split("\n");
    expect(lines[0]).toMatch(/^replay of cli\/local from the oldest message kept to now \(\d+ messages\)$/);
    const order = ["tester → mom: how many files?", "started for tester", "✓ Count the files", "mom: There are **42** files.", "ended (stop): "];
    const at = order.map((t) => lines.findIndex((l) => l.includes(t)));
    expect(at.every((i) => i > 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(r.out).toContain("· receipt tool.call.succeeded bash [destructive]");
    const consumersAfter = await connectionOf(s.bus).jsm.consumers.list(s.bus.subjects.stream("IN")).next();
    expect(consumersAfter.map((c) => c.name).sort()).toEqual(consumersBefore.map((c) => c.name).sort());
  });

  it("--json prints one entry per line; --since in the future and --from-seq narrow the window", async () => {
    const r = await momRun(["replay", "cli/local", "--json", "--data", s.dataDir]);
    expect(r.code).toBe(0);
    const entries = r.out.trim().split("\n").map((l) => JSON.parse(l));
    expect(entries[0]).toMatchObject({ kind: "in", stream: expect.stringMatching(/_IN$/), channel: "cli/local", data: { text: "how many files?" } });
    expect(entries.some((e) => e.kind === "out" && e.data.event.type === "run_ended")).toBe(true);
    expect(entries.some((e) => e.kind === "receipts")).toBe(true);
    const empty = await momRun(["replay", "cli/local", "--json", "--since", new Date(Date.now() + 60_000).toISOString(), "--data", s.dataDir]);
    expect(empty.out).toBe("");
    const fromSecond = await momRun(["replay", "cli/local", "--json", "--from-seq", "2", "--data", s.dataDir]);
    expect(fromSecond.out).not.toContain("how many files?");
    expect((await momRun(["replay", "cli/local", "--since", "yesterday-ish", "--data", s.dataDir])).err).toMatch(/^mom: --since: expected a duration/);
  });

  it("reports messages that aged out of retention", async () => {
    const inStream = s.bus.subjects.stream("IN");
    const first = (await connectionOf(s.bus).jsm.streams.info(inStream)).state.first_seq;
    await connectionOf(s.bus).jsm.streams.purge(inStream, { seq: first + 1 }); // what max_age would have removed
    const r = await momRun(["replay", "cli/local", "--data", s.dataDir]);
    expect(r.out).toMatch(new RegExp(`older messages of ${inStream} have aged out of retention: it keeps 7 days; its oldest is #${first + 1}`));
    expect(r.out).not.toContain("how many files?");
    const json = await momRun(["replay", "cli/local", "--json", "--data", s.dataDir]);
    expect(JSON.parse(json.out.split("\n")[0]!)).toMatchObject({ kind: "aged_out", stream: inStream, firstSeq: first + 1 });
  });
});

describe("mom replay --redrive", () => {
  let s: Stack;
  beforeAll(async () => {
    s = await startStack();
    s.llm.enqueue({ text: "Recorded answer." });
    s.type("say something");
    await s.output.waitFor("Recorded answer.");
    await s.output.waitFor(/\$\?/);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it("feeds the recorded messages to a fresh agent in a scratch workspace and prints both answers", async () => {
    const scratch = mkdtempSync(join(tmpdir(), "mom-redrive-test-"));
    const logBefore = readFileSync(join(s.loaded.paths.workspaceDir, "channels/cli/local/log.jsonl"), "utf8");
    const outBefore = (await connectionOf(s.bus).jsm.streams.info(s.bus.subjects.stream("OUT"))).state.messages;
    s.llm.enqueue({ toolCalls: [{ name: "bash", arguments: { label: "Think harder", command: "true" } }] }, { text: "A new answer." });
    const r = await momRun(["replay", "cli/local", "--redrive", "--workspace", scratch, "--data", s.dataDir]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toContain("── ");
    expect(r.out).toContain("tester: say something");
    expect(r.out).toMatch(/recorded \(run \w{8}, fake\/fake-model, stop\): Recorded answer\./);
    expect(r.out).toMatch(/redrive {2}\(fake\/fake-model, stop\): A new answer\./);
    expect(r.out).toContain("✓ Think harder");
    // the fresh agent worked in the scratch dir; the live channel and the bus are as they were
    expect(readFileSync(join(scratch, "workspace/channels/cli/local/log.jsonl"), "utf8")).toContain("A new answer.");
    expect(readFileSync(join(s.loaded.paths.workspaceDir, "channels/cli/local/log.jsonl"), "utf8")).toBe(logBefore);
    expect((await connectionOf(s.bus).jsm.streams.info(s.bus.subjects.stream("OUT"))).state.messages).toBe(outBefore);
    expect((await momRun(["replay", "cli/local", "--redrive", "--workspace", join(s.dataDir, "workspace"), "--data", s.dataDir])).err).toMatch(/^mom: --workspace .*inside the data dir/);
    expect(existsSync(scratch)).toBe(true);
    rmSync(scratch, { recursive: true, force: true });
  });
});
