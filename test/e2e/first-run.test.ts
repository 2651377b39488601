import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { freePort, startFakeLlm, type FakeLlm } from "@mom/testing";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const mom = join(root, "services/cli/bin/mom.js");

function momRun(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ code: number | null; out: string; err: string }> {
  const env = { ...process.env, ...opts.env };
  if (!opts.env?.NATS_URL) delete env.NATS_URL;
  const child = spawn(process.execPath, [mom, ...args], { cwd: opts.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (t: string) => (out += t));
  child.stderr.setEncoding("utf8").on("data", (t: string) => (err += t));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, out, err })));
}

async function listening(port: number): Promise<void> {
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, "127.0.0.1").once("connect", () => (s.destroy(), resolve(true))).once("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A nats-server started the way a user may find one: without JetStream, or with a token. */
async function plainNats(args: string[]): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(process.env.NATS_SERVER_BIN || "nats-server", ["-a", "127.0.0.1", "-p", String(port), ...args], { stdio: "ignore" });
  await listening(port);
  return { url: `nats://127.0.0.1:${port}`, child };
}

// What a new user types, and what each mistake must answer: one line, no stack, nothing created.
describe("first run: the command line", () => {
  let dir: string;
  let llm: FakeLlm;
  let dataDir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "mom-first-run-"));
    llm = await startFakeLlm();
    dataDir = join(dir, "data");
    mkdirSync(dataDir);
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ model: "fake/fake-model" }));
  });
  afterAll(async () => {
    await llm.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("--version, per-command help that creates nothing, did-you-mean", async () => {
    const version = await momRun(["--version"]);
    expect(version).toMatchObject({ code: 0, out: `${JSON.parse(readFileSync(join(root, "services/cli/package.json"), "utf8")).version}\n` });

    const help = await momRun(["up", "--help"], { cwd: dir });
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/^Usage: mom up \[options\] \[dataDir\]/);
    expect(existsSync(join(dir, "--help"))).toBe(false);

    const all = await momRun(["--help"]);
    for (const c of ["up", "runner", "scheduler", "events", "ingress", "doctor", "receipts", "replay", "tail", "auth", "usage"]) expect(all.out).toMatch(new RegExp(`\\n  ${c} `));

    const typo = await momRun(["replya"]);
    expect(typo.code).toBe(2);
    expect(typo.err).toContain("unknown command 'replya'");
    expect(typo.err).toContain("(Did you mean replay?)");
  });

  it("usage mistakes are one line: a bad channel id, a mistyped data dir (not created)", async () => {
    const receipts = await momRun(["receipts", "local"]);
    expect(receipts.code).toBe(1);
    expect(receipts.err).toMatch(/^mom: invalid qualified channel id "local": expected "<adapter>\/<channelId>", e\.g\. cli\/local[^\n]*\n$/);

    const events = await momRun(["events", join(dir, "typo")]);
    expect(events).toMatchObject({ code: 1, err: `mom: no data dir ${join(dir, "typo")} (\`mom up ${join(dir, "typo")}\` creates one; dataDir defaults to ./data)\n` });
    const doctor = await momRun(["doctor", join(dir, "typo2")]);
    expect(doctor.code).toBe(1);
    expect(doctor.out).toContain(`✗ config: no data dir ${join(dir, "typo2")}`);
    expect(existsSync(join(dir, "typo")) || existsSync(join(dir, "typo2"))).toBe(false);
  });

  it("NATS unreachable, a refused token, a server without JetStream: one line each, saying what to do", async () => {
    const down = await momRun(["runner", dataDir], { env: { NATS_URL: "nats://127.0.0.1:1" } });
    expect(down.code).toBe(1);
    expect(down.err).toMatch(/^mom: cannot connect to NATS at nats:\/\/127\.0\.0\.1:1 \(connection "agent-runner"\): connection refused\n$/);

    const guarded = await plainNats(["--auth", "s3cret-token", "-js", "-sd", join(dir, "js-auth")]);
    const noJs = await plainNats([]);
    try {
      const refused = await momRun(["runner", dataDir], { env: { NATS_URL: guarded.url.replace("nats://", "nats://wrong-token@") } });
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(/^mom: cannot connect to NATS at nats:\/\/127\.0\.0\.1:\d+ \(connection "agent-runner"\): Authorization Violation\n$/);
      expect(refused.err).not.toContain("wrong-token");

      const debian = await momRun(["runner", dataDir], { env: { NATS_URL: noJs.url } });
      expect(debian.code).toBe(1);
      const lines = debian.err.split("\n").filter((l) => !l.startsWith("{"));
      expect(lines).toEqual([expect.stringMatching(/^mom: NATS at nats:\/\/127\.0\.0\.1:\d+ runs without JetStream, which mom needs: start nats-server with -js \(Debian's nats-server service: add `jetstream \{ store_dir: "\/var\/lib\/nats" \}` to \/etc\/nats-server\.conf/), ""]);
    } finally {
      guarded.child.kill();
      noJs.child.kill();
    }
  });

  it("a second `mom up` on the same data dir refuses, naming the first; the dir is free again after it quits", async () => {
    const first = spawn(process.execPath, [mom, "up", dataDir], { env: { ...process.env, NATS_URL: "" }, stdio: ["pipe", "pipe", "pipe"] });
    const out = new OutputCapture();
    first.stdout.setEncoding("utf8").on("data", out.write);
    first.stderr.setEncoding("utf8").on("data", out.write);
    const exited = new Promise<number | null>((r) => first.once("exit", (code) => r(code)));
    await out.waitFor("mom is up", 30_000);

    const second = await momRun(["up", dataDir]);
    expect(second.code).toBe(1);
    expect(second.err).toBe(`mom: ${dataDir} is in use by another \`mom up\` (pid ${first.pid}): quit that one first, or give this one its own data dir (\`mom up OTHER_DIR\`); a crashed one's lock clears within 10 s\n`);
    // the first one still answers
    first.stdin.write("still there?\n");
    await out.waitFor("ok");

    first.stdin.end();
    expect(await exited).toBe(0);
    expect(existsSync(join(dataDir, "mom-up.lock"))).toBe(false);
  }, 60_000);
});
