import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startFakeLlm, startTestNats, type FakeLlm, type TestNats } from "@mom/testing";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const mom = join(root, "services/cli/bin/mom.js");

function momRun(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [mom, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (t: string) => (out += t));
  child.stderr.setEncoding("utf8").on("data", (t: string) => (out += t));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, out })));
}

// `mom init` as a new user meets it: in a terminal (a pty, through util-linux's `script`), answering
// each question, with the fake model as the OpenAI-compatible server; then `mom up` on what it wrote.
describe("mom init", () => {
  let llm: FakeLlm;
  let nats: TestNats;
  let dir: string;
  beforeAll(async () => {
    llm = await startFakeLlm();
    nats = await startTestNats();
    dir = mkdtempSync(join(tmpdir(), "mom-init-"));
  });
  afterAll(async () => {
    await llm.close();
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("asks in a terminal, checks the model live, writes files that load, and mom up answers with them", async () => {
    const data = join(dir, "data");
    const shell = `${JSON.stringify(process.execPath)} ${JSON.stringify(mom)} init -d ${JSON.stringify(data)}`;
    const child = spawn("script", ["-qfec", shell, "/dev/null"], { env: { ...process.env, TERM: "dumb" }, stdio: ["pipe", "pipe", "pipe"] });
    const out = new OutputCapture();
    child.stdout.setEncoding("utf8").on("data", out.write);
    child.stderr.setEncoding("utf8").on("data", out.write);
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const answer = async (prompt: string | RegExp, text: string) => {
      await out.waitFor(prompt, 30_000);
      child.stdin.write(`${text}\r`);
    };
    try {
      await answer("Model provider (", llm.baseUrl);
      await answer(/Model id \(the server serves fake-model\) \[fake-model\]: /, "");
      await answer("API key of the server (Enter: none", "");
      await answer("Prices in USD per million tokens", "");
      await answer("Chat platforms to enable besides the terminal", "");
      await out.waitFor("Checking local/fake-model with a one-word call… it answered.", 30_000);
      expect(await exited).toBe(0);
    } finally {
      child.kill();
    }
    expect(out.text).toContain(`Wrote ${join(data, "config.json")}, ${join(data, "models.json")}.`);
    expect(out.text).toContain("No prices for local/fake-model: usage lines show $?");
    expect(JSON.parse(readFileSync(join(data, "config.json"), "utf8"))).toEqual({ model: "local/fake-model" });
    const models = JSON.parse(readFileSync(join(data, "models.json"), "utf8"));
    expect(models.providers.local).toMatchObject({ baseUrl: llm.baseUrl, api: "openai-completions", apiKey: "local", models: [{ id: "fake-model" }] });
    expect(llm.requests).toHaveLength(1);

    // What it wrote loads and answers.
    llm.enqueue({ text: "hello from the configured model" });
    const up = spawn(process.execPath, [mom, "up", data], { env: { ...process.env, NATS_URL: nats.url }, stdio: ["pipe", "pipe", "pipe"] });
    const upOut = new OutputCapture();
    up.stdout.setEncoding("utf8").on("data", upOut.write);
    up.stderr.setEncoding("utf8").on("data", upOut.write);
    const upExited = new Promise<number | null>((r) => up.once("exit", (code) => r(code)));
    try {
      await upOut.waitFor("mom is up (model local/fake-model", 60_000);
      up.stdin.write("hello\n");
      await upOut.waitForAnswer("hello from the configured model", 30_000);
      expect(upOut.text).toMatch(/ in · [\d,]+ out · \$\? · /);
    } finally {
      up.stdin.end();
      await upExited;
    }
  }, 180_000);

  it("works from flags alone, refuses to overwrite without --force, and writes nothing when the model check fails", async () => {
    const data = join(dir, "flags");
    const flags = ["init", "-d", data, "--base-url", llm.baseUrl, "--provider", "ollama", "--model", "fake-model", "--api-key", "sk-local-123456", "--cost", "0.2,0.6", "--adapters", "slack"];
    const first = await momRun(flags);
    expect(first.out).toContain("it answered.");
    expect(first.code).toBe(0);
    expect(first.out).toContain("Before `mom up`, set SLACK_BOT_TOKEN, SLACK_APP_TOKEN");
    expect(JSON.parse(readFileSync(join(data, "config.json"), "utf8"))).toEqual({
      model: "ollama/fake-model",
      // "besides the terminal": the terminal chat stays (an adapters list without cli would have none).
      adapters: { cli: { type: "cli" }, slack: { type: "slack", botToken: "env:SLACK_BOT_TOKEN", appToken: "env:SLACK_APP_TOKEN" } },
    });
    expect(JSON.parse(readFileSync(join(data, "models.json"), "utf8")).providers.ollama.models[0].cost).toEqual({ input: 0.2, output: 0.6, cacheRead: 0, cacheWrite: 0 });

    const again = await momRun(flags);
    expect(again.code).toBe(1);
    expect(again.out).toBe(`mom: ${join(data, "config.json")} exists: \`mom init --force\` replaces it (and models.json, and adds to auth-profiles.json)\n`);

    const stopped = await startFakeLlm();
    await stopped.close();
    const deaf = join(dir, "deaf");
    const failed = await momRun(["init", "-d", deaf, "--base-url", stopped.baseUrl, "--model", "fake-model", "--adapters", "none", "-y"]);
    expect(failed.code).toBe(1);
    expect(failed.out).toContain(`mom: model local/fake-model at ${stopped.baseUrl}: connection refused (ECONNREFUSED) — nothing listens there`);
    expect(failed.out).toContain("(nothing written; `mom init --no-check` writes the files without this check)");
    expect(existsSync(join(deaf, "config.json"))).toBe(false);
  }, 120_000);

  // -y "asks nothing": a question without a default is an error naming the flag, not a prompt that
  // waits on an open standard input (a script in a terminal would hang there).
  it("-y does not ask a question that has no default, even with stdin open", async () => {
    const data = join(dir, "yes");
    const child = spawn(process.execPath, [mom, "init", "-d", data, "--provider", "anthropic", "--adapters", "none", "--no-check", "-y"], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (t: string) => (out += t));
    child.stderr.setEncoding("utf8").on("data", (t: string) => (out += t));
    const code = await Promise.race([new Promise((r) => child.once("close", r)), new Promise((r) => setTimeout(() => r("still waiting"), 10_000))]);
    child.kill("SIGKILL");
    expect(code).toBe(1);
    expect(out).toBe("mom: -y asks nothing: give --setup-token or --api-key\n");
    expect(existsSync(join(data, "config.json"))).toBe(false);
  }, 30_000);

  it("stores an Anthropic setup-token as an auth profile (0600), checked like `mom auth add`", async () => {
    const data = join(dir, "anthropic");
    const bad = await momRun(["init", "-d", data, "--provider", "anthropic", "--setup-token", "sk-ant-api03-not-a-token", "--adapters", "none", "--no-check"]);
    expect(bad.code).toBe(1);
    expect(existsSync(join(data, "config.json"))).toBe(false);
    const token = `sk-ant-oat01-${"x".repeat(90)}`;
    const ok = await momRun(["init", "-d", data, "--provider", "anthropic", "--setup-token", token, "--adapters", "none", "--no-check", "-y"]);
    expect(ok.code).toBe(0);
    expect(JSON.parse(readFileSync(join(data, "config.json"), "utf8"))).toEqual({ model: "anthropic/claude-sonnet-4-5" });
    expect(JSON.parse(readFileSync(join(data, "auth-profiles.json"), "utf8")).profiles).toEqual([{ id: "anthropic-subscription", provider: "anthropic", type: "token", secret: token }]);
    expect(statSync(join(data, "auth-profiles.json")).mode & 0o777).toBe(0o600);
    expect(ok.out).not.toContain(token);
  }, 60_000);
});
