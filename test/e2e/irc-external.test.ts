import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startRunner, type RunningService } from "@mom/agent-runner";
import { Bus, busOptions } from "@mom/bus";
import { createLogger, loadConfig } from "@mom/config";
import { type FakeLlm, freePort, ngircdAvailable, startFakeLlm, startIrcServer, startTestNats, type TestIrcServer, type TestNats } from "@mom/testing";
import { type ChildProcess, spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { Client } from "irc-framework";
import { writeTestDataDir } from "../support/data-dir.js";
import { eventually } from "../support/discord-stack.js";
import { inboundMessages } from "../support/inbound.js";
import { buildIrcExample, cleanEnv } from "../support/irc-example.js";
import { OutputCapture } from "../support/output-capture.js";

// examples/ingress-irc is an ingress written outside this workspace: its only mom dependency is
// the SDK's packed tarball. Here it is installed from that tarball into a directory of its own,
// built, and run as its own process against a real IRC server (ngircd) next to real NATS, the
// runner and the scripted LLM; people are irc-framework clients.
const ADAPTER = "irc";
const CHANNEL = "#mom";

interface Line {
  nick: string;
  target: string;
  message: string;
  type: "privmsg" | "notice";
}

/** Someone on IRC, with every line they received. */
async function person(server: TestIrcServer, nick: string): Promise<{ client: Client; lines: Line[]; quits: Array<{ nick: string; message: string }> }> {
  const client = new Client();
  const lines: Line[] = [];
  const quits: Array<{ nick: string; message: string }> = [];
  client.on("privmsg", (e) => lines.push({ nick: e.nick, target: e.target, message: e.message, type: "privmsg" }));
  client.on("notice", (e: Line) => lines.push({ nick: e.nick, target: e.target, message: e.message, type: "notice" }));
  client.on("quit", (e: { nick: string; message: string }) => quits.push(e));
  await new Promise<void>((resolve, reject) => {
    client.once("registered", () => client.join(CHANNEL));
    client.once("join", () => resolve());
    client.once("close", () => reject(new Error(`${nick} could not connect to ngircd:\n${server.log()}`)));
    client.connect({ host: server.host, port: server.port, nick, auto_reconnect: false });
  });
  return { client, lines, quits };
}

const run = ngircdAvailable() ? describe : describe.skip;
if (!ngircdAvailable()) console.warn("irc-external: ngircd is not installed (apt-get install -y ngircd): skipped");

run("an ingress built outside the workspace: examples/ingress-irc from the SDK tarball, on a real IRC server", () => {
  let exampleDir: string;
  let nats: TestNats;
  let llm: FakeLlm;
  let irc: TestIrcServer;
  let dataDir: string;
  let bus: Bus;
  let runner: RunningService;
  let ingress: ChildProcess;
  let exited: Promise<number | null>;
  const err = new OutputCapture();
  let httpPort: number;
  let ana: Awaited<ReturnType<typeof person>>;
  let bob: Awaited<ReturnType<typeof person>>;

  beforeAll(async () => {
    exampleDir = buildIrcExample();
    [nats, llm, irc, httpPort] = await Promise.all([startTestNats(), startFakeLlm(), startIrcServer(), freePort()]);
    dataDir = writeTestDataDir("mom-e2e-irc-", nats, llm, {
      adapters: { [ADAPTER]: { type: "external", platform: "irc", admins: ["ana"], settings: { host: irc.host, port: irc.port, tls: false, nick: "mom", channels: [CHANNEL] } } },
      policy: { ask: ["write"] },
      log: { level: "info" }, // the ingress says when it is receiving
    });
    const loaded = loadConfig(dataDir, {});
    const logger = createLogger("e2e-irc", { level: "warn" });
    bus = await Bus.connect(busOptions(loaded, nats.url, "e2e-test", logger));
    await bus.provision();
    runner = await startRunner({ loaded, bus: busOptions(loaded, nats.url, "agent-runner", logger), logger });
    await startIngress();
    [ana, bob] = await Promise.all([person(irc, "ana"), person(irc, "bob")]);
  }, 240_000);

  /** The example as its own process; resolves once it receives. */
  async function startIngress(): Promise<void> {
    const receiving = err.text.split("irc ingress receiving").length;
    ingress = spawn(process.execPath, [join(exampleDir, "dist/main.js"), "--adapter", ADAPTER, "--data-dir", dataDir], {
      cwd: exampleDir,
      env: cleanEnv({ MOM_HTTP_PORT: String(httpPort) }),
      stdio: ["ignore", "ignore", "pipe"],
    });
    ingress.stderr!.setEncoding("utf8").on("data", err.write);
    exited = new Promise((r) => ingress.once("exit", (code) => r(code)));
    await eventually(() => err.text.split("irc ingress receiving").length > receiving, "the ingress receiving", 30_000);
  }

  afterAll(async () => {
    if (ingress && ingress.exitCode === null) ingress.kill("SIGKILL");
    await Promise.all([ana, bob].map((p) => p?.client.connected && new Promise((r) => (p.client.once("close", r), p.client.quit()))));
    await runner?.close();
    await bus?.drain();
    await Promise.all([irc?.stop(), llm?.close(), nats?.stop()]);
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const from = (who: { lines: Line[] }, target: string, pattern: RegExp, type: Line["type"] = "privmsg") =>
    eventually(() => who.lines.find((l) => l.nick === "mom" && l.type === type && l.target.toLowerCase() === target && pattern.test(l.message)), `mom's ${type} ${pattern} to ${target}`, 20_000);

  it("is ready, and answers a mention in the channel; every line is logged, only the mention runs", async () => {
    const readyz = await fetch(`http://127.0.0.1:${httpPort}/readyz`);
    expect([readyz.status, await readyz.json()]).toEqual([200, { status: "ready" }]);
    bob.client.say(CHANNEL, "the build is red again");
    // Two connections: ana speaks once bob's line went round, so the channel's order is known.
    await eventually(() => ana.lines.find((l) => l.nick === "bob"), "bob's line");
    llm.enqueue({ text: "Hello from mom on IRC." });
    ana.client.say(CHANNEL, "mom: why is it red?");
    await from(ana, CHANNEL, /^Hello from mom on IRC\.$/);
    // The usage line closes the answer: the whole run was drawn.
    await from(ana, CHANNEL, /📊 \d[\d,]* in · \d+ out/);
    const msgs = (await inboundMessages(bus)).filter((m) => m.channelId === CHANNEL);
    expect(msgs.map((m) => [m.sender.username, m.text, m.isMention])).toEqual([
      ["bob", "the build is red again", false],
      ["ana", "@mom why is it red?", true],
    ]);
    expect(msgs[1]).toMatchObject({ sender: { id: "ana", username: "ana", isBot: false }, rawText: "mom: why is it red?" });
  });

  it("a long answer is cut into IRC lines, none over the line limit, nothing lost", async () => {
    const words = Array.from({ length: 150 }, (_, i) => `word${i}`);
    llm.enqueue({ text: words.join(" ") });
    const before = ana.lines.length;
    ana.client.say(CHANNEL, "mom, say a lot");
    await from(ana, CHANNEL, /word149/);
    const got = ana.lines.slice(before).filter((l) => l.nick === "mom" && /word\d/.test(l.message));
    expect(got.length).toBeGreaterThan(1);
    for (const l of got) expect(Buffer.byteLength(l.message)).toBeLessThanOrEqual(400);
    expect(got.map((l) => l.message).join(" ").split(/\s+/)).toEqual(words);
  });

  it("a private message is a direct message, answered privately", async () => {
    llm.enqueue({ text: "Just between us." });
    bob.client.say("mom", "hi, can we talk?");
    await from(bob, "bob", /^Just between us\.$/);
    const dm = (await inboundMessages(bus)).find((m) => m.channelId === "bob");
    expect(dm).toMatchObject({ isDirect: true, isMention: true, text: "hi, can we talk?" });
  });

  it("approvals: !approve <code> from an admin decides; anyone else is told they may not", async () => {
    llm.enqueue({ toolCalls: [{ name: "write", arguments: { label: "Plan", path: "scratch/plan.txt", content: "final\n" } }] }, { text: "The plan is written." });
    ana.client.say(CHANNEL, "mom: write the plan");
    const prompt = await from(ana, CHANNEL, /!approve [0-9a-f]{8}/);
    const code = /!approve ([0-9a-f]{8})/.exec(prompt.message)![1]!;
    expect(ana.lines.some((l) => l.message.startsWith("Who can decide: @ana"))).toBe(true);

    bob.client.say(CHANNEL, `!approve ${code}`);
    await from(bob, "bob", /can decide/, "notice");
    ana.client.say(CHANNEL, `!approve ${code}`);
    await from(ana, CHANNEL, /^The plan is written\.$/);
    await from(ana, CHANNEL, /Allowed once by @ana/);
    expect((await inboundMessages(bus)).some((m) => m.text.startsWith("!approve"))).toBe(false);

    // The SDK's one-time codes: one that decided decides nothing more, an unknown one nothing at all.
    bob.client.say(CHANNEL, `!deny ${code}`);
    await from(bob, "bob", new RegExp(`The code ${code} was used already`), "notice");
    bob.client.say(CHANNEL, "!deny 00000000");
    await from(bob, "bob", /No approval is waiting for the code 00000000/, "notice");
  });

  it("after a restart of the ingress, a code shown before it still decides, typed privately too", async () => {
    llm.enqueue({ toolCalls: [{ name: "write", arguments: { label: "Memo", path: "scratch/memo.txt", content: "memo\n" } }] }, { text: "The memo is written." });
    const seen = ana.lines.length;
    ana.client.say(CHANNEL, "mom: write the memo");
    const prompt = await eventually(() => ana.lines.slice(seen).find((l) => l.nick === "mom" && /!approve \d{8}/.test(l.message)), "the memo's prompt", 20_000);
    const code = /!approve (\d{8})/.exec(prompt.message)![1]!;
    const refusals = bob.lines.length;
    ingress.kill("SIGTERM");
    expect(await exited).toBe(0);
    await startIngress();
    // bob may not decide, after the restart as before it; ana may, and says so to mom alone.
    bob.client.say(CHANNEL, `!approve ${code}`);
    await eventually(() => bob.lines.slice(refusals).find((l) => l.type === "notice" && /Only @ana can decide this/.test(l.message)), "bob told he may not decide", 20_000);
    ana.client.say("mom", `!approve ${code}`);
    await from(ana, CHANNEL, /^The memo is written\.$/);
    expect(ana.lines.slice(seen).some((l) => l.nick === "mom" && /Allowed once by @ana/.test(l.message))).toBe(true);
  }, 60_000);

  it("the IRC server goes away, even within seconds of the ingress registering: /readyz says so; the ingress reconnects, joins again, answers again", async () => {
    // Registered moments ago (the case before restarted it): irc-framework's own reconnects would
    // take this for a ban and give up.
    const readyz = async () => {
      const r = await fetch(`http://127.0.0.1:${httpPort}/readyz`);
      return { status: r.status, body: (await r.json()) as { reason?: string } };
    };
    const back = irc.restart(1500);
    const down = await eventually(async () => ((await readyz()).status === 503 ? readyz() : undefined), "/readyz 503");
    expect(down.body.reason).toMatch(new RegExp(`^ingress-irc: disconnected from 127\\.0\\.0\\.1:${irc.port} since \\d{4}-`));
    await back;
    await eventually(async () => (await readyz()).status === 200, "/readyz 200 again", 40_000);
    ana = await person(irc, "ana");
    llm.enqueue({ text: "Back again." });
    ana.client.say(CHANNEL, "mom: still there?");
    await from(ana, CHANNEL, /^Back again\.$/);
  }, 60_000);

  it("SIGTERM: the ingress quits IRC and exits 0", async () => {
    ingress.kill("SIGTERM");
    expect(await exited).toBe(0);
    const quit = await eventually(() => ana.quits.find((q) => q.nick === "mom"), "mom's QUIT");
    expect(quit.message).toMatch(/mom is stopping/);
    expect(err.text).not.toMatch(/"level":(50|60)/);
  });
});
