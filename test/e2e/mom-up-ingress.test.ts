import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type FakeLlm, type FakeTelegram, startFakeLlm, startFakeTelegram } from "@mom/testing";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";
import { alive, commandLine, descendants, eventually } from "../support/processes.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const mom = join(root, "services/cli/bin/mom.js");
const ana = { id: 1001, is_bot: false, first_name: "Ana", username: "ana" };
const dm = { id: 1001, type: "private" as const, first_name: "Ana", username: "ana" };

// One command runs the bot: `mom up` starts the configured adapters' ingresses too, each a process
// of its own, and runs headless when there is no terminal (systemd, containers).
describe("mom up with a Telegram adapter, without a terminal", () => {
  let llm: FakeLlm;
  let telegram: FakeTelegram;
  let dataDir: string;
  beforeAll(async () => {
    llm = await startFakeLlm();
    telegram = await startFakeTelegram();
    dataDir = mkdtempSync(join(tmpdir(), "mom-up-ingress-"));
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(
      join(dataDir, "config.json"),
      JSON.stringify({
        model: "fake/fake-model",
        nats: { namespace: `upi${process.pid}` },
        adapters: { cli: { type: "cli" }, tg: { type: "telegram", botToken: "env:MOM_TEST_TG_TOKEN", apiUrl: telegram.url } },
      }),
    );
  });
  afterAll(async () => {
    await llm.close();
    await telegram.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const answered = async (text: string) => {
    const ok = await eventually(() => telegram.botMessages(dm.id).some((m) => m.text?.startsWith(text)), 30_000);
    if (!ok) process.stderr.write(`bot messages: ${JSON.stringify(telegram.botMessages(dm.id))}\nmom.log:\n${readFileSync(join(dataDir, "logs", "mom.log"), "utf8").slice(-6000)}\n`);
    return ok;
  };

  it("answers on Telegram, restarts a killed ingress with backoff (said in the terminal and the log), stops on SIGTERM", async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, MOM_TEST_TG_TOKEN: telegram.token };
    delete env.NATS_URL;
    // stdin is /dev/null, as under systemd: no terminal chat, and no end of input that would quit.
    const up = spawn(process.execPath, [mom, "up", dataDir], { env, stdio: ["ignore", "pipe", "pipe"] });
    const out = new OutputCapture();
    up.stdout.setEncoding("utf8").on("data", out.write);
    up.stderr.setEncoding("utf8").on("data", out.write);
    const exited = new Promise<number | null>((r) => up.once("exit", (code) => r(code)));
    let started: number[] = [];
    try {
      await out.waitFor("mom is up", 60_000);
      expect(out.text).toMatch(/mom is up without a terminal chat \(model fake\/fake-model, NATS nats:\/\/127\.0\.0\.1:\d+, ingress tg, [^)]*\); stdin is not a terminal\. SIGTERM or Ctrl-C stops it\./);

      llm.enqueue({ text: "hello from telegram" });
      telegram.say({ chat: dm, from: ana, text: "hi" });
      expect(await answered("hello from telegram")).toBe(true);

      const ingressPid = () => descendants(up.pid!).find((p) => commandLine(p).includes(" ingress tg "));
      const first = ingressPid()!;
      expect(first).toBeDefined();
      process.kill(first, "SIGKILL");
      await out.waitFor(/mom: ingress tg exited \(signal SIGKILL\) after [\d.]+ s; restarting it in 1 s \(restart 1\)/, 10_000);
      await out.waitFor(/mom: ingress tg started again \(pid \d+\)/, 10_000);
      expect(ingressPid()).not.toBe(first);
      expect(readFileSync(join(dataDir, "logs", "mom.log"), "utf8")).toContain("ingress tg exited (signal SIGKILL)");

      llm.enqueue({ text: "still here" });
      telegram.say({ chat: dm, from: ana, text: "still there?" });
      expect(await answered("still here")).toBe(true);

      started = descendants(up.pid!);
      up.kill("SIGTERM");
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 20_000))]);
      expect(code).toBe(0);
      expect(await eventually(() => started.every((p) => !alive(p)), 5000)).toBe(true);
      expect(existsSync(join(dataDir, "mom-up.lock"))).toBe(false);
    } finally {
      for (const p of [up.pid!, ...started, ...descendants(up.pid!)]) if (alive(p)) process.kill(p, "SIGKILL");
    }
  }, 150_000);
});

// One broken platform does not take the others down, and the terminal says why it is down: the
// reason the ingress gave (its one `mom: …` line, in the log file) rather than only an exit code.
describe("mom up with a working and two broken adapters", () => {
  let llm: FakeLlm;
  let telegram: FakeTelegram;
  let dataDir: string;
  beforeAll(async () => {
    llm = await startFakeLlm();
    telegram = await startFakeTelegram();
    dataDir = mkdtempSync(join(tmpdir(), "mom-up-broken-"));
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(
      join(dataDir, "config.json"),
      JSON.stringify({
        model: "fake/fake-model",
        nats: { namespace: `upb${process.pid}` },
        adapters: {
          cli: { type: "cli" },
          tg: { type: "telegram", botToken: "env:MOM_TEST_TG_TOKEN", apiUrl: telegram.url },
          tgbad: { type: "telegram", botToken: "999:not-the-token", apiUrl: telegram.url },
          // Nothing listens on port 1.
          dc: { type: "discord", botToken: "fake-discord-token", apiUrl: "http://127.0.0.1:1/api" },
        },
      }),
    );
  });
  afterAll(async () => {
    await llm.close();
    await telegram.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("says in the terminal why each broken ingress exited, and the working one answers", async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, MOM_TEST_TG_TOKEN: telegram.token };
    delete env.NATS_URL;
    const up = spawn(process.execPath, [mom, "up", dataDir], { env, stdio: ["ignore", "pipe", "pipe"] });
    const out = new OutputCapture();
    up.stdout.setEncoding("utf8").on("data", out.write);
    up.stderr.setEncoding("utf8").on("data", out.write);
    const exited = new Promise<number | null>((r) => up.once("exit", (code) => r(code)));
    let started: number[] = [];
    try {
      await out.waitFor("mom is up", 60_000);
      await out.waitFor(/mom: ingress tgbad exited \(code 1\) after [\d.]+ s: telegram adapter "tgbad": the bot token was refused \(getMe: [^\n]*401[^\n]*\); restarting it in 1 s \(restart 1\)/, 20_000);
      await out.waitFor(/mom: ingress dc exited \(code 1\) after [\d.]+ s: discord adapter "dc": could not connect to Discord: [^\n]*ECONNREFUSED[^\n]*; restarting it in 1 s \(restart 1\)/, 20_000);

      llm.enqueue({ text: "the good one works" });
      telegram.say({ chat: dm, from: ana, text: "hi" });
      expect(await eventually(() => telegram.botMessages(dm.id).some((m) => m.text?.startsWith("the good one works")), 30_000)).toBe(true);

      started = descendants(up.pid!);
      up.kill("SIGTERM");
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 20_000))]);
      expect(code).toBe(0);
    } finally {
      for (const p of [up.pid!, ...started, ...descendants(up.pid!)]) if (alive(p)) process.kill(p, "SIGKILL");
    }
  }, 150_000);
});
