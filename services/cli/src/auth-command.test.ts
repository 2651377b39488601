import { afterAll, afterEach, beforeEach, describe, expect, it } from "@jest/globals";
import { CooldownBoard } from "@mom/auth";
import { Bus } from "@mom/bus";
import { ConfigError, createLogger, loadConfig } from "@mom/config";
import { startTestNats, type TestNats } from "@mom/testing";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { authCommand } from "./auth-command.js";

const SETUP_TOKEN = `sk-ant-oat01-${"Ab3_-x".repeat(15)}`;
const API_KEY = "sk-ant-api03-secretsecretsecret-WXYZ";

let dataDir: string;
let nats: TestNats | undefined;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), "mom-auth-cmd-"));
  // A port nothing listens on: `list` must still work without NATS.
  writeFileSync(join(dataDir, "config.json"), JSON.stringify({ nats: { url: "nats://127.0.0.1:1" }, channels: { "cli/local": {} } }));
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));
afterAll(async () => nats?.stop());

async function mom(args: string[], stdin = ""): Promise<{ code: number; out: string }> {
  const input = new PassThrough();
  input.end(stdin);
  let out = "";
  const code = await authCommand([...args, "--data", dataDir], { input, write: (t) => void (out += t) });
  return { code, out };
}
const profiles = () => JSON.parse(readFileSync(join(dataDir, "auth-profiles.json"), "utf8")).profiles;
const config = () => JSON.parse(readFileSync(join(dataDir, "config.json"), "utf8"));

describe("mom auth", () => {
  it("adds an API key from stdin into a 0600 file and lists it masked", async () => {
    const added = await mom(["add", "anthropic", "--api-key"], `${API_KEY}\n`);
    expect(added.code).toBe(0);
    expect(added.out).toContain("Stored anthropic-key (sk-ant-api03-…WXYZ)");
    expect(added.out).not.toContain(API_KEY);
    expect(statSync(join(dataDir, "auth-profiles.json")).mode & 0o777).toBe(0o600);
    expect(profiles()).toEqual([{ id: "anthropic-key", provider: "anthropic", type: "api_key", secret: API_KEY }]);
    await mom(["add", "openai", "--api-key", "--id", "team", "--secret", "env:OPENAI_TEAM_KEY"]);
    const list = await mom(["list"]);
    expect(list.out).toContain("anthropic:\n  1. anthropic-key  api_key  sk-ant-api03-…WXYZ");
    expect(list.out).toContain("openai:\n  1. team  api_key  env:OPENAI_TEAM_KEY");
    expect(list.out).toContain("then: the environment (ANTHROPIC_OAUTH_TOKEN, ANTHROPIC_API_KEY)");
    expect(list.out).toContain("(cooldowns not shown: NATS at nats://127.0.0.1:1 not reachable)");
    expect(list.out).not.toContain(API_KEY);
  });

  it("--setup-token checks the pasted token's shape, stores it and puts it first", async () => {
    await mom(["add", "anthropic", "--api-key", "--id", "work"], `${API_KEY}\n`);
    await mom(["order", "anthropic", "work"]);
    await expect(mom(["add", "anthropic", "--setup-token"], `${API_KEY}\n`)).rejects.toThrow(/this is an Anthropic API key, not a setup token/);
    await expect(mom(["add", "anthropic", "--setup-token"], "sk-ant-oat01-short\n")).rejects.toThrow(/cut short/);
    const added = await mom(["add", "anthropic", "--setup-token"], `${SETUP_TOKEN}\n`);
    expect(added.out).toContain("Run `claude setup-token`");
    expect(added.out).toContain("it is now anthropic's first credential");
    expect(added.out).not.toContain(SETUP_TOKEN);
    expect(profiles().map((p: { id: string; type: string }) => [p.id, p.type])).toEqual([["anthropic-subscription", "token"], ["work", "api_key"]]);
    expect(config().auth.order.anthropic).toEqual(["anthropic-subscription", "work"]);
    expect(loadConfig(dataDir, {}).config.auth.order.anthropic).toEqual(["anthropic-subscription", "work"]);
  });

  it("order checks ids; remove also drops the id from the order and channel pins", async () => {
    await mom(["add", "fake", "--api-key", "--id", "a", "--secret", "key-a"]);
    await mom(["add", "fake", "--api-key", "--id", "b", "--secret", "key-b"]);
    await expect(mom(["order", "fake", "b", "nope"])).rejects.toThrow(ConfigError);
    await expect(mom(["order", "fake", "b", "nope"])).rejects.toThrow(/\/auth\/order\/fake\/1: no auth profile "nope"/);
    expect((await mom(["order", "fake", "b", "a"])).out).toBe("auth.order.fake = b, a\n");
    const raw = config();
    raw.channels["cli/local"].authProfile = "b";
    writeFileSync(join(dataDir, "config.json"), JSON.stringify(raw));
    expect((await mom(["list"])).out).toContain("1. b  api_key  …  pinned by cli/local");
    expect((await mom(["remove", "b"])).out).toContain("Removed b (and its mentions in");
    expect(config().auth.order.fake).toEqual(["a"]);
    expect(config().channels["cli/local"]).toEqual({});
    expect(profiles().map((p: { id: string }) => p.id)).toEqual(["a"]);
    await expect(mom(["remove", "b"])).rejects.toThrow(/no auth profile "b"/);
    expect((await mom(["bogus"])).code).toBe(2);
  });

  it("list shows cooldowns from NATS", async () => {
    nats = await startTestNats();
    writeFileSync(join(dataDir, "config.json"), JSON.stringify({ nats: { url: nats.url, namespace: nats.namespace } }));
    await mom(["add", "fake", "--api-key", "--id", "a", "--secret", "key-a"]);
    const bus = await Bus.connect({ url: nats.url, name: "t", namespace: nats.namespace, logger: createLogger("t", { level: "silent" }) });
    const board = await CooldownBoard.open(bus);
    const until = await board.coolDown("fake", "a", "rate_limit", 60_000);
    await bus.drain();
    const list = await mom(["list"]);
    expect(list.out).toContain(`cooling down until ${new Date(until).toISOString()} (rate_limit)`);
    expect(list.out).not.toContain("not reachable");
  });
});
