import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startFakeLlm, type FakeLlm } from "@mom/testing";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { OutputCapture } from "../support/output-capture.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const TOKEN = "ops-token-0123456789abcdef";

// `mom up` with a console section in config.json: the web console starts with the rest, on the
// same bus, its URL in the "mom is up" line, and stops with it.
describe("mom up with a console section (built binary, own NATS)", () => {
  let llm: FakeLlm;
  let dataDir: string;
  beforeAll(async () => {
    llm = await startFakeLlm();
    dataDir = mkdtempSync(join(tmpdir(), "mom-up-console-"));
    writeFileSync(join(dataDir, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(
      join(dataDir, "config.json"),
      JSON.stringify({ model: "fake/fake-model", console: { port: 0, users: { ops: { role: "viewer", token: "env:MOM_TEST_CONSOLE_TOKEN" } } } }),
    );
  });
  afterAll(async () => {
    await llm.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const momUp = (env: NodeJS.ProcessEnv) => {
    const child = spawn(process.execPath, [join(root, "services/cli/bin/mom.js"), "up", dataDir], { env, stdio: ["pipe", "pipe", "pipe"] });
    const out = new OutputCapture();
    child.stdout.setEncoding("utf8").on("data", out.write);
    child.stderr.setEncoding("utf8").on("data", out.write);
    return { child, out, exited: new Promise<number | null>((r) => child.once("exit", (code) => r(code))) };
  };

  it("refuses to start while a console login token's variable is unset, naming the field", async () => {
    const env = { ...process.env };
    delete env.NATS_URL;
    delete env.MOM_TEST_CONSOLE_TOKEN;
    const { out, exited } = momUp(env);
    expect(await exited).not.toBe(0);
    expect(out.text).toMatch(/console\/users\/ops\/token[\s\S]*MOM_TEST_CONSOLE_TOKEN/);
  }, 30_000);

  it("serves the console with the runner: sign in, see the replica and the chat's channel; gone when mom up quits", async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, MOM_TEST_CONSOLE_TOKEN: TOKEN };
    delete env.NATS_URL;
    const { child, out, exited } = momUp(env);
    await out.waitFor("mom is up", 30_000);
    const url = /, console (http:\/\/127\.0\.0\.1:\d+)/.exec(out.text)?.[1];
    expect(url).toBeDefined();
    llm.enqueue({ text: "hello from mom up" });
    child.stdin.write("hi\n");
    await out.waitFor("hello from mom up");

    const login = await fetch(`${url}/login`, { method: "POST", redirect: "manual", headers: { "content-type": "application/x-www-form-urlencoded", origin: url! }, body: `token=${TOKEN}` });
    expect(login.status).toBe(303);
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    let page = "";
    for (let i = 0; i < 50 && !(page.includes("data-runner=") && page.includes('data-channel="cli/local"')); i++) {
      await new Promise((r) => setTimeout(r, 200));
      page = await (await fetch(`${url}/`, { headers: { cookie } })).text();
    }
    expect(page).toContain("data-runner=");
    expect(page).toContain('data-channel="cli/local"');

    child.stdin.end();
    expect(await exited).toBe(0);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  }, 60_000);
});
