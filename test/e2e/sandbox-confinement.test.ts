import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { ChannelMessage } from "@mom/contracts";
import { freePort, type FakeRequest, type FakeTurn } from "@mom/testing";
import { type ChildProcess, spawn } from "node:child_process";
import { chownSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";
import { startStack, type Stack } from "../support/stack.js";
import { outboundEvents } from "../support/streams.js";

// What an attacker's tool calls get from a `mom runner` process (as root, as the quick start runs
// it) with bubblewrap: the model asks for the commands and file reads, real bwrap runs them.
const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const asRoot = process.getuid?.() === 0;
const tag = `${process.pid}-${Date.now()}`;
const CANARY = `/etc/mom-e2e-canary-${tag}`;
const OTHERS = `/etc/mom-e2e-others-${tag}`;

/** Scripted turns per scenario, chosen by a word in the run's user message; step = tool results so far in this run. */
const scripts = new Map<string, FakeTurn[]>();
function respond(req: FakeRequest): FakeTurn {
  const msgs = req.messages as Array<{ role: string; content: unknown }>;
  const lastUser = msgs.map((m) => m.role).lastIndexOf("user");
  const text = JSON.stringify(msgs[lastUser]?.content ?? "");
  const step = msgs.slice(lastUser).filter((m) => m.role === "tool").length;
  for (const [word, turns] of scripts) if (text.includes(word)) return turns[step] ?? { text: `${word} done` };
  return { text: "ok" };
}

function toolResults(st: Stack, word: string): string {
  const req = [...st.llm.requests].reverse().find((r) => JSON.stringify(r.messages).includes(word))!;
  const msgs = req.messages as Array<{ role: string; content: unknown }>;
  const lastUser = msgs.map((m) => m.role).lastIndexOf("user");
  return JSON.stringify(msgs.slice(lastUser).filter((m) => m.role === "tool").map((m) => m.content));
}

function message(channelId: string, text: string): ChannelMessage {
  return { id: `m-${Math.random().toString(36).slice(2)}`, channelId, timestamp: new Date().toISOString(), sender: { id: "u-tester", username: "tester", isBot: false }, text, attachments: [], isMention: true };
}

const endedRuns = async (st: Stack, channelId: string) => (await outboundEvents(st.bus, { adapter: "cli", channelId })).filter((e) => e.event.type === "run_ended");

/** The first run of the channel to end after the `before` ones; `at` is when the test saw it end. */
async function runEnded(st: Stack, channelId: string, before: number, timeoutMs = 60_000): Promise<{ finalText?: string; at: number }> {
  for (const deadline = Date.now() + timeoutMs; ; ) {
    const ended = (await endedRuns(st, channelId)).slice(before);
    if (ended.length) return { finalText: (ended[0]!.event as { finalText?: string }).finalText, at: Date.now() };
    if (Date.now() > deadline) throw new Error(`no answer in cli/${channelId}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function ask(st: Stack, channelId: string, word: string, turns: FakeTurn[]): Promise<{ finalText?: string; at: number }> {
  scripts.set(word, turns);
  const before = (await endedRuns(st, channelId)).length;
  const m = message(channelId, `please ${word}`);
  await st.bus.publish(st.bus.subjects.channel("in", { adapter: "cli", channelId }), m, m.id);
  return runEnded(st, channelId, before);
}

const bash = (command: string) => ({ toolCalls: [{ name: "bash", arguments: { label: "Run", command } }] });

(asRoot ? describe : describe.skip)("a root `mom runner` with bubblewrap: host files, memory, /tmp and disk are bounded", () => {
  let st: Stack;
  let runner: ChildProcess;
  const log = new OutputCapture();
  const channelDir = () => join(st.loaded.paths.workspaceDir, "channels", "cli", "attacker");

  beforeAll(async () => {
    writeFileSync(CANARY, "host-secret-canary\n", { mode: 0o600 });
    writeFileSync(OTHERS, "another-users-notes\n", { mode: 0o640 });
    chownSync(OTHERS, 4242, 4242);
    st = await startStack({ runner: false, cli: false, config: { log: { level: "info" }, sandbox: { type: "bwrap", memoryMb: 128, tmpMb: 16, maxFileMb: 64, diskMb: 100 } } });
    st.llm.setFallback(respond);
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.NATS_URL;
    runner = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "runner", st.dataDir], { env, stdio: ["ignore", "pipe", "pipe"] });
    runner.stderr!.setEncoding("utf8").on("data", log.write);
    runner.stdout!.setEncoding("utf8").on("data", log.write);
    await log.waitFor("agent runner ready", 30_000);
  }, 60_000);
  afterAll(async () => {
    runner?.kill("SIGKILL");
    rmSync(CANARY, { force: true });
    rmSync(OTHERS, { force: true });
    await st?.stop();
  });

  it("bash and the read tool both fail on a root-owned mode-600 file and on another user's mode-640 file", async () => {
    const r = await ask(st, "attacker", "canary", [
      bash(`id -u; cat ${CANARY} ${OTHERS}; echo bash-finished`),
      { toolCalls: [{ name: "read", arguments: { label: "Read", path: CANARY } }] },
      { toolCalls: [{ name: "read", arguments: { label: "Read", path: OTHERS } }] },
    ]);
    expect(r.finalText).toBe("canary done");
    const results = toolResults(st, "canary");
    expect(results).toContain("bash-finished");
    expect(results).toContain("10001");
    expect(results).toContain("Permission denied");
    expect(results).toContain("permission denied");
    expect(results).not.toContain("host-secret-canary");
    expect(results).not.toContain("another-users-notes");
  }, 60_000);

  it("a command over the memory limit is killed with a clear line, and another channel is answered meanwhile", async () => {
    const hog = ask(st, "attacker", "memoryhog", [bash("sleep 2; x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo survived ${#x}")]);
    await new Promise((r) => setTimeout(r, 300));
    const other = await ask(st, "bystander", "hello-bystander", []);
    const hogged = await hog;
    expect(other.finalText).toBe("hello-bystander done");
    expect(other.at).toBeLessThan(hogged.at);
    const results = toolResults(st, "memoryhog");
    expect(results).not.toContain("survived 400000000");
    expect(results).toContain("more than 128 MB of memory");
  }, 60_000);

  it("filling /tmp beyond its size fails", async () => {
    await ask(st, "attacker", "filltmp", [bash("head -c 40000000 /dev/zero > /tmp/big; echo rc=$?; df -k /tmp | tail -1")]);
    const results = toolResults(st, "filltmp");
    expect(results).toContain("No space left on device");
    expect(results).toMatch(/tmpfs\s+16384\s/);
  }, 60_000);

  it("a big fallocate in the channel directory is stopped, and so is filling it with writes, while another channel is answered", async () => {
    const fill = ask(st, "attacker", "filldisk", [
      bash("fallocate -l 5G huge.bin; echo rc=$?"),
      bash("for i in $(seq 1 100); do head -c 10000000 /dev/zero > fill-$i.bin; sleep 0.3; done; echo filled-all"),
    ]);
    // The writes take ~3 s to reach the limit (10 MB each 0.3 s); the other channel asks meanwhile.
    await new Promise((r) => setTimeout(r, 800));
    const other = await ask(st, "bystander", "second-bystander", []);
    const filled = await fill;
    expect(other.finalText).toBe("second-bystander done");
    expect(other.at).toBeLessThan(filled.at);
    const results = toolResults(st, "filldisk");
    expect(results).toMatch(/fallocate failed: (Operation not supported|File too large)/);
    expect(results).not.toContain("filled-all");
    expect(results).toContain("mom stopped the command: this channel's directory grew to");
    expect(results).toContain("over its disk limit of 100 MB");
    const files = readdirSync(channelDir()).filter((n) => n.startsWith("fill-"));
    expect(files.length).toBeLessThan(15);
  }, 60_000);
});

describe("a runner that cannot isolate channels", () => {
  let st: Stack;
  beforeAll(async () => {
    st = await startStack({ runner: false, cli: false, config: { log: { level: "info" } } });
  });
  afterAll(async () => {
    await st?.stop();
  });

  function spawnRunner(env: NodeJS.ProcessEnv): { child: ChildProcess; log: OutputCapture; exited: Promise<number | null> } {
    const e: NodeJS.ProcessEnv = { ...process.env, ...env };
    delete e.NATS_URL;
    const child = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "runner", st.dataDir], { env: e, stdio: ["ignore", "pipe", "pipe"] });
    const log = new OutputCapture();
    child.stderr!.setEncoding("utf8").on("data", log.write);
    child.stdout!.setEncoding("utf8").on("data", log.write);
    return { child, log, exited: new Promise((r) => child.once("exit", (code) => r(code))) };
  }

  it('refuses to start with sandbox "auto" where bubblewrap cannot run, and says NO CHANNEL ISOLATION', async () => {
    // No bwrap on PATH: what a container without it (or a cluster that blocks it) looks like to auto.
    const r = spawnRunner({ PATH: "/nonexistent" });
    expect(await r.exited).not.toBe(0);
    expect(r.log.text).toContain("NO CHANNEL ISOLATION");
    expect(r.log.text).toContain('"sandbox": {"type": "host"}');
    expect(r.log.text).not.toContain("agent runner ready");
  }, 60_000);

  it('starts with sandbox "host" said explicitly, and /readyz says NO CHANNEL ISOLATION', async () => {
    const config = JSON.parse(readFileSync(join(st.dataDir, "config.json"), "utf8")) as Record<string, unknown>;
    writeFileSync(join(st.dataDir, "config.json"), JSON.stringify({ ...config, sandbox: { type: "host" } }));
    const port = await freePort();
    const r = spawnRunner({ MOM_HTTP_PORT: String(port) });
    try {
      await r.log.waitFor("agent runner ready", 30_000);
      expect(r.log.text).toContain("NO CHANNEL ISOLATION");
      let body: { status?: string; warnings?: string[] } = {};
      for (const deadline = Date.now() + 10_000; body.status !== "ready" && Date.now() < deadline; await new Promise((res) => setTimeout(res, 100))) {
        body = (await (await fetch(`http://127.0.0.1:${port}/readyz`)).json().catch(() => ({}))) as typeof body;
      }
      expect(body.status).toBe("ready");
      expect(body.warnings?.join(" ")).toContain("NO CHANNEL ISOLATION");
    } finally {
      r.child.kill("SIGKILL");
    }
  }, 60_000);
});
