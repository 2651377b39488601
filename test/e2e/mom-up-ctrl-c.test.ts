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
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

// A user's terminal: `mom up` on a pseudo-terminal (util-linux `script`), Ctrl-C typed while the
// model is still answering. Ctrl-C reaches the terminal's whole foreground process group at once.
describe("mom up: Ctrl-C during a run (under a pty)", () => {
  let llm: FakeLlm;
  let telegram: FakeTelegram;
  let dataDir: string;
  beforeAll(async () => {
    llm = await startFakeLlm();
    telegram = await startFakeTelegram();
    dataDir = mkdtempSync(join(tmpdir(), "mom-ctrl-c-"));
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
    // A Telegram adapter too: its ingress is a child process of `mom up`, which must end with it.
    const adapters = { cli: { type: "cli" }, tg: { type: "telegram", botToken: "env:MOM_TEST_TG_TOKEN", apiUrl: telegram.url } };
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { namespace: `ctrlc${process.pid}` }, adapters }));
  });
  afterAll(async () => {
    await llm.close();
    await telegram.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it.each([
    ["mom up", [mom, "up"]],
    ["npm start (scripts/start.mjs)", [join(root, "scripts/start.mjs")]],
  ])("%s: ends every process it started and frees the data dir within 5 s; the terminal is left as it was", async (_name, args) => {
    // The second case starts where the first left off: its Ctrl-C handed the message over, so
    // the restarted runner resumes it (that run takes the hang) before the new message.
    const asked = llm.requests.length;
    llm.enqueue({ hang: true });
    const env: NodeJS.ProcessEnv = { ...process.env, SHELL: "/bin/bash", TERM: "xterm", MOM_TEST_TG_TOKEN: telegram.token };
    delete env.NATS_URL;
    // After mom, the shell prints the terminal's settings: raw mode would show as -icanon/-echo.
    const command = `${[process.execPath, ...args, dataDir].map(quote).join(" ")}; echo "mom exited $?"; stty -a`;
    const pty = spawn("script", ["-qfec", command, "/dev/null"], { env, stdio: ["pipe", "pipe", "pipe"] });
    const out = new OutputCapture();
    pty.stdout.setEncoding("utf8").on("data", out.write);
    pty.stderr.setEncoding("utf8").on("data", out.write);
    const exited = new Promise<number | null>((r) => pty.once("exit", (code) => r(code)));
    try {
      await out.waitFor("mom is up", 60_000);
      pty.stdin.write("hang on\r");
      await llm.waitForRequests(asked + 1, 20_000);
      await out.waitFor("working", 10_000);

      const momPid = Number(readFileSync(join(dataDir, "mom-up.pid"), "utf8"));
      const natsPid = Number(readFileSync(join(dataDir, "nats", "nats-server.pid"), "utf8"));
      // Everything under the shell that runs the command (the shell itself stays, to run stty).
      const shell = descendants(pty.pid!)[0]!;
      expect(await eventually(() => descendants(shell).some((p) => commandLine(p).includes(" ingress tg ")), 30_000)).toBe(true);
      const started = descendants(shell);
      expect(started).toEqual(expect.arrayContaining([momPid, natsPid]));
      expect(started.some((p) => commandLine(p).includes(" ingress tg "))).toBe(true);
      expect(commandLine(momPid)).toContain(" up ");

      const at = Date.now();
      pty.stdin.write("\x03");
      const allGone = await eventually(() => started.every((p) => !alive(p)), 5000);
      const lockFreed = await eventually(() => !existsSync(join(dataDir, "mom-up.lock")), Math.max(0, 5000 - (Date.now() - at)));
      const left = started.filter(alive).map((p) => `${p}: ${commandLine(p)}`);
      expect({ left, lockFreed }).toEqual({ left: [], lockFreed: true });

      await out.waitFor("mom exited", 5000);
      await out.waitFor(/speed .*\n[\s\S]*;\s*$/m, 5000).catch(() => {});
      expect(await exited).toBe(0);
      const settings = out.text.slice(out.text.indexOf("mom exited"));
      expect(settings).toMatch(/mom exited 130/);
      expect(settings).toMatch(/(^|\s)icanon(\s|$)/m);
      expect(settings).toMatch(/(^|\s)echo(\s|$)/m);
      expect(out.text).not.toMatch(/TimeoutError|did not stop within/);
    } finally {
      if (pty.exitCode === null) pty.kill("SIGKILL");
      const momPid = existsSync(join(dataDir, "mom-up.pid")) ? Number(readFileSync(join(dataDir, "mom-up.pid"), "utf8")) : 0;
      for (const p of momPid ? [momPid, ...descendants(momPid)] : []) if (alive(p)) process.kill(p, "SIGKILL");
    }
  }, 120_000);
});
