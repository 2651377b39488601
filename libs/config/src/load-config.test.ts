import { describe, expect, it, beforeEach, afterEach } from "@jest/globals";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, defaultConfig, loadConfig, unsetEnvRefs } from "./index.js";

let dataDir: string;
let file: string;
beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), "mom-config-"));
  file = join(dataDir, "config.json");
});
afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

function errorFor(text: string, env: NodeJS.ProcessEnv = {}): ConfigError {
  writeFileSync(file, text);
  try {
    loadConfig(dataDir, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`expected ${text} to be rejected`);
}

describe("loadConfig", () => {
  it("gives defaults and data paths for a fresh data dir", () => {
    const { config, paths } = loadConfig(dataDir, {});
    expect(config).toEqual(defaultConfig());
    expect(config.model).toBe("anthropic/claude-sonnet-4-5");
    expect(config.adapters).toEqual({ cli: { type: "cli" } });
    expect(paths).toEqual({
      dataDir,
      configFile: file,
      modelsFile: join(dataDir, "models.json"),
      authFile: join(dataDir, "auth.json"),
      authProfilesFile: join(dataDir, "auth-profiles.json"),
      workspaceDir: join(dataDir, "workspace"),
    });
  });

  it("reads a full valid file", () => {
    const full = {
      model: "openrouter/meta/llama-3",
      thinkingLevel: "high",
      nats: { url: "nats://nats:4222", namespace: "mom-test", streams: { maxAgeHours: 24, duplicateWindowSeconds: 60, replicas: 3 } },
      adapters: { cli: { type: "cli", admins: ["alice"], dm: ["alice", "bob"], busy: "steer" }, "cli-2": { type: "cli", dm: "none" } },
      sandbox: { type: "bwrap", network: true, env: { GIT_AUTHOR_NAME: "mom" }, shared: ["skills"], sharedWriters: ["cli/local", "cli-2/ops"], maxOutputBytes: 1000, maxProcesses: 64 },
      runner: { idleEvictMinutes: 5, maxConcurrentRuns: 2, runTimeoutMinutes: 10, leaseSeconds: 10, shutdownGraceSeconds: 5, maxCrashes: 2, publishRetrySeconds: 30, listChannels: true, jobs: { maxPerChannel: 2, maxRuntimeMinutes: 5, outputKeptBytes: 1000 } },
      attachments: { maxBytes: 1024, downloadSeconds: 30 },
      scheduler: { graceMinutes: 0, maxQueuedPerChannel: 5, maxPerMinutePerChannel: 2, watch: "poll", pollIntervalMs: 500 },
      channels: { "cli/local": { model: "fake/other", thinkingLevel: "low" }, "slack-acme/C0A34FL8PMH": {} },
      policy: {
        tools: { allow: ["*"], deny: ["github.*.delete"] },
        adapters: { cli: { allow: ["bash", "read", "notes.*"] } },
        channels: { "cli/local": { deny: ["bash"] } },
        providers: { ollama: { deny: ["write"] } },
        sandbox: {},
        ask: ["notes.todo.*"],
        autoAllow: [],
        approvalTimeoutSeconds: 60,
        requesterMayApprove: true,
      },
      tools: { globalDir: "/etc/mom/tools", settings: { caldav: { url: "http://127.0.0.1:5232/", password: "env:CALDAV_PASSWORD" } } },
      web: { allow: ["*.python.org"], deny: ["bad.python.org"], privateRanges: ["10.1.0.0/16", "fd00::/8"], maxBytes: 1000, maxChars: 500, timeoutSeconds: 5, maxRedirects: 0 },
      spawn: { tokens: 20_000, maxTokens: 50_000, seconds: 60, maxSeconds: 120, maxPerRun: 2 },
      send: { routes: [{ from: "cli/local", to: ["cli-2/*", "cli/ops"] }], timeoutSeconds: 10 },
      auth: { order: {} },
      limits: {},
      log: { level: "debug" },
      observability: { httpPort: 9090 },
      console: { port: 8481, host: "0.0.0.0", identityHeader: "X-Auth-Request-User", users: { ann: { role: "approver", as: { cli: "u-ann" } } } },
    };
    writeFileSync(file, JSON.stringify(full, null, 2));
    expect(loadConfig(dataDir, {}).config).toEqual(full);
  });

  it("fills defaults key by key inside sections but replaces adapters whole", () => {
    writeFileSync(file, JSON.stringify({ nats: { streams: { maxAgeHours: 1 } }, runner: { maxConcurrentRuns: 4, jobs: { maxPerChannel: 2 } }, adapters: { term: { type: "cli" } } }));
    const { config } = loadConfig(dataDir, {});
    expect(config.nats).toEqual({ url: "nats://127.0.0.1:4222", namespace: "mom", streams: { maxAgeHours: 1, duplicateWindowSeconds: 120, replicas: 1 } });
    expect(config.runner).toEqual({
      idleEvictMinutes: 30, maxConcurrentRuns: 4, runTimeoutMinutes: 30, leaseSeconds: 20, shutdownGraceSeconds: 20, maxCrashes: 3, publishRetrySeconds: 90, listChannels: false,
      jobs: { maxPerChannel: 2, maxRuntimeMinutes: 60, outputKeptBytes: 65536 },
    });
    expect(config.adapters).toEqual({ term: { type: "cli" } });
  });

  it("takes stream retention per stream and refuses a stream that does not exist", () => {
    writeFileSync(file, JSON.stringify({ nats: { streams: { maxBytes: 1_000_000, byStream: { receipts: { maxAgeHours: 2160 }, out: { maxBytes: 500_000 } } } } }));
    expect(loadConfig(dataDir, {}).config.nats.streams).toEqual({
      maxAgeHours: 168,
      duplicateWindowSeconds: 120,
      replicas: 1,
      maxBytes: 1_000_000,
      byStream: { receipts: { maxAgeHours: 2160 }, out: { maxBytes: 500_000 } },
    });
    writeFileSync(file, JSON.stringify({ nats: { streams: { byStream: { inbound: { maxAgeHours: 1 } } } } }));
    expect(() => loadConfig(dataDir, {})).toThrow(/\/nats\/streams\/byStream/);
  });

  it("accepts a byte-order mark", () => {
    writeFileSync(file, "\ufeff{\"log\": {\"level\": \"warn\"}}");
    expect(loadConfig(dataDir, {}).config.log.level).toBe("warn");
  });
});

describe("ConfigError messages name file, path and expectation", () => {
  it("JSON syntax: line and column", () => {
    const err = errorFor('{\n  "model": "a/b",\n  "runner": }\n');
    expect(err.message).toBe(`${file}: invalid JSON at line 3, column 13: unexpected "}", expected a value`);
  });

  it("JSON syntax: trailing comma and empty file", () => {
    expect(errorFor('{"log": {"level": "info"},\n}').message).toContain("line 2, column 1: unexpected \"}\" after \",\": trailing commas");
    expect(errorFor("").message).toContain("line 1, column 1: unexpected end of input");
  });

  it("wrong type", () => {
    const err = errorFor(JSON.stringify({ runner: { maxConcurrentRuns: "lots" } }));
    expect(err.message).toBe(`${file}: /runner/maxConcurrentRuns: expected integer >= 1, got "lots"`);
    expect(err.issues).toEqual([{ path: "/runner/maxConcurrentRuns", message: 'expected integer >= 1, got "lots"' }]);
    expect(errorFor(JSON.stringify({ runner: { idleEvictMinutes: 1.5 } })).message).toContain("/runner/idleEvictMinutes: expected integer >= 1, got 1.5");
    expect(errorFor(JSON.stringify({ nats: "nats://x" })).message).toBe(`${file}: /nats: expected object, got "nats://x"`);
    expect(errorFor("[]").message).toBe(`${file}: /: expected object, got an array`);
  });

  it("unknown key, with a hint for near misses", () => {
    expect(errorFor(JSON.stringify({ runner: { maxConcurentRuns: 3 } })).message).toBe(
      `${file}: /runner/maxConcurentRuns: unknown key "maxConcurentRuns" (did you mean "maxConcurrentRuns"?); ` +
        'allowed keys: "idleEvictMinutes", "maxConcurrentRuns", "runTimeoutMinutes", "leaseSeconds", "shutdownGraceSeconds", "maxCrashes", "publishRetrySeconds", "listChannels", "jobs"',
    );
    expect(errorFor(JSON.stringify({ runner: { jobs: { maxPerChanel: 3 } } })).message).toContain('/runner/jobs/maxPerChanel: unknown key "maxPerChanel" (did you mean "maxPerChannel"?)');
    expect(errorFor(JSON.stringify({ foo: 1 })).message).toMatch(new RegExp(`^${escape(file)}: /foo: unknown key "foo"; allowed keys: "model", `));
    expect(errorFor(JSON.stringify({ adapters: { cli: { type: "cli", admin: ["a"] } } })).message).toContain(
      '/adapters/cli/admin: unknown key "admin" (did you mean "admins"?)',
    );
  });

  it("bad model", () => {
    expect(errorFor(JSON.stringify({ model: "claude-sonnet" })).message).toBe(
      `${file}: /model: expected "<provider>/<modelId>", e.g. "anthropic/claude-sonnet-4-5", got "claude-sonnet"`,
    );
    expect(errorFor(JSON.stringify({ model: "anthropic/" })).message).toContain('/model: expected "<provider>/<modelId>"');
  });

  it("bad adapter name and bad adapter type", () => {
    expect(errorFor(JSON.stringify({ adapters: { Slack_Acme: { type: "cli" } } })).message).toBe(
      `${file}: /adapters/Slack_Acme: invalid adapter name "Slack_Acme": expected lower-case letters, digits and '-' ([a-z0-9-]+)`,
    );
    expect(errorFor(JSON.stringify({ adapters: { acme: { type: "irc" } } })).message).toBe(
      `${file}: /adapters/acme/type: expected one of "cli", "slack", "discord", "telegram", "whatsapp", "external", got "irc"`,
    );
    expect(errorFor(JSON.stringify({ adapters: { acme: {} } })).message).toContain('/adapters/acme/type: missing required key "type"');
    expect(errorFor(JSON.stringify({ adapters: { acme: { type: "cli", dm: "some" } } })).message).toContain(
      '/adapters/acme/dm: expected "everyone", "none" or an array of user ids, got "some"',
    );
    expect(errorFor(JSON.stringify({ adapters: { acme: { type: "cli", dm: ["ok", ""] } } })).message).toContain(
      '/adapters/acme/dm/1: expected non-empty string, got ""',
    );
  });

  it("bad enum", () => {
    expect(errorFor(JSON.stringify({ thinkingLevel: "max" })).message).toBe(
      `${file}: /thinkingLevel: expected one of "off", "minimal", "low", "medium", "high", "xhigh", got "max"`,
    );
    expect(errorFor(JSON.stringify({ log: { level: "verbose" } })).message).toContain('/log/level: expected one of "fatal", "error"');
    expect(errorFor(JSON.stringify({ sandbox: { type: "podman" } })).message).toContain('/sandbox/type: expected one of "auto", "bwrap", "host", "docker", got "podman"');
    expect(errorFor(JSON.stringify({ sandbox: { type: "docker" } })).message).toContain('/sandbox/image: missing required key "image"');
    expect(errorFor(JSON.stringify({ sandbox: { type: "host", network: true } })).message).toContain('/sandbox/network: unknown key "network"');
  });

  it("bad NATS url and namespace", () => {
    expect(errorFor(JSON.stringify({ nats: { url: "http://x:4222" } })).message).toBe(
      `${file}: /nats/url: expected a NATS server URL like nats://127.0.0.1:4222 (comma-separated for several), got "http://x:4222"`,
    );
    expect(errorFor(JSON.stringify({ nats: { namespace: "Mom.prod" } })).message).toContain("/nats/namespace: expected a lower-case name");
  });

  it("a web.privateRanges entry that is not a CIDR", () => {
    expect(errorFor(JSON.stringify({ web: { privateRanges: ["10.0.0.0/8", "10.0.0.0/33", "intranet"] } })).message.split("\n")).toEqual([
      `${file}: /web/privateRanges/1: expected a CIDR like 10.1.0.0/16 or fd00::/8, got "10.0.0.0/33"`,
      `${file}: /web/privateRanges/2: expected a CIDR like 10.1.0.0/16 or fd00::/8, got "intranet"`,
    ]);
  });

  it("a console.trustedProxies entry that is not a CIDR", () => {
    expect(errorFor(JSON.stringify({ console: { trustedProxies: ["10.42.0.0/16", "10.42.0.1"] } })).message.split("\n")).toEqual([
      `${file}: /console/trustedProxies/1: expected a CIDR like 10.42.0.0/16 or ::1/128, got "10.42.0.1"`,
    ]);
  });

  it("a spawn default budget above its cap", () => {
    expect(errorFor(JSON.stringify({ spawn: { tokens: 600_000, seconds: 60, maxSeconds: 30 } })).message.split("\n")).toEqual([
      `${file}: /spawn/tokens: is 600000, more than spawn.maxTokens (500000): raise spawn.maxTokens or lower spawn.tokens`,
      `${file}: /spawn/seconds: is 60, more than spawn.maxSeconds (30): raise spawn.maxSeconds or lower spawn.seconds`,
    ]);
  });

  it("reports every problem, one line each", () => {
    const err = errorFor(JSON.stringify({ model: "x", runner: { maxConcurrentRuns: 0 } }));
    expect(err.message.split("\n")).toEqual([
      `${file}: /model: expected "<provider>/<modelId>", e.g. "anthropic/claude-sonnet-4-5", got "x"`,
      `${file}: /runner/maxConcurrentRuns: expected integer >= 1, got 0`,
    ]);
  });

  it("an unreadable file", () => {
    mkdirSync(file);
    expect(() => loadConfig(dataDir, {})).toThrow(`${file}: cannot read: EISDIR`);
  });

  it("a symlink to a file that does not exist (never starts on defaults instead)", () => {
    symlinkSync(join(dataDir, "gone.json"), file);
    expect(() => loadConfig(dataDir, {})).toThrow(`${file}: is a symlink to ${join(dataDir, "gone.json")}, which does not exist`);
  });

  it("a bad NATS url is listed with the schema problems", () => {
    const err = errorFor(JSON.stringify({ nats: { url: "http://x" }, runner: { maxConcurrentRuns: 0 } }));
    expect(err.issues.map((i) => i.path)).toEqual(["/runner/maxConcurrentRuns", "/nats/url"]);
  });

  it("names the file the way the caller spelt the data dir", () => {
    writeFileSync(file, "{");
    const relative = join(dataDir, "..", dataDir.split("/").pop()!);
    expect(() => loadConfig(relative, {})).toThrow(`${join(relative, "config.json")}: invalid JSON at line 1, column 2`);
  });
});

describe("env overrides", () => {
  it("MOM_MODEL and NATS_URL win over the file", () => {
    writeFileSync(file, JSON.stringify({ model: "anthropic/claude-haiku-4-5", nats: { url: "nats://file:4222" } }));
    const { config } = loadConfig(dataDir, { MOM_MODEL: "openai/gpt-5", NATS_URL: "nats://env-a:4222,nats://env-b:4222" });
    expect(config.model).toBe("openai/gpt-5");
    expect(config.nats.url).toBe("nats://env-a:4222,nats://env-b:4222");
  });

  it("treats empty variables as unset", () => {
    expect(loadConfig(dataDir, { MOM_MODEL: "", NATS_URL: "" }).config).toEqual(defaultConfig());
  });

  it("rejects bad values naming the variable", () => {
    expect(() => loadConfig(dataDir, { MOM_MODEL: "gpt-5" })).toThrow(
      'env MOM_MODEL: expected "<provider>/<modelId>", e.g. "anthropic/claude-sonnet-4-5", got "gpt-5"',
    );
    expect(() => loadConfig(dataDir, { NATS_URL: "http://localhost:4222" })).toThrow(
      'env NATS_URL: expected a NATS server URL like nats://127.0.0.1:4222 (comma-separated for several), got "http://localhost:4222"',
    );
    expect(() => loadConfig(dataDir, { NATS_URL: "nats://a:4222,,nats://b:4222" })).toThrow(ConfigError);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

describe("NATS URLs with credentials", () => {
  it("never repeats a password in an error", async () => {
    const { redactNatsUrl } = await import("./nats-url.js");
    expect(redactNatsUrl("nats://runner:s3cret@nats:4222,tok@b:4222")).toBe("nats://***@nats:4222,***@b:4222");
    expect(() => loadConfig(mkdtempSync(join(tmpdir(), "mom-cfg-")), { NATS_URL: "http://runner:s3cret@nats:4222" })).toThrow(/NATS_URL: .*\*\*\*@nats:4222/);
    try {
      loadConfig(mkdtempSync(join(tmpdir(), "mom-cfg-")), { NATS_URL: "http://runner:s3cret@nats:4222" });
    } catch (err) {
      expect(String(err)).not.toContain("s3cret");
    }
  });
});

describe("shared writers and the channel list (issue 30)", () => {
  it("trusts no channel with the shared paths and lists no channel by default", () => {
    const { config } = loadConfig(dataDir, {});
    expect(config.runner.listChannels).toBe(false);
    expect((config.sandbox as { sharedWriters?: string[] }).sharedWriters).toBeUndefined();
  });

  it("names a shared writer that is not a qualified channel id, or whose adapter is not configured", () => {
    const err = errorFor(JSON.stringify({ adapters: { slack: { type: "cli" } }, sandbox: { type: "auto", sharedWriters: ["C0123", "slack/C1", "slak/C2"] } }));
    expect(err.message.split("\n")).toEqual([
      `${file}: /sandbox/sharedWriters/0: expected a qualified channel id "<adapter>/<channelId>", e.g. "slack/C0123", got "C0123"`,
      `${file}: /sandbox/sharedWriters/2: no adapter "slak" in adapters (adapters: slack), got "slak/C2"`,
    ]);
    expect(errorFor(JSON.stringify({ sandbox: { type: "auto", sharedWriters: "cli/local" } })).message).toBe(
      `${file}: /sandbox/sharedWriters: expected an array of qualified channel ids like "slack/C0123", got "cli/local"`,
    );
    expect(errorFor(JSON.stringify({ runner: { listChannels: "yes" } })).message).toBe(`${file}: /runner/listChannels: expected boolean, got "yes"`);
  });
});

describe("send routes (issue 34)", () => {
  it("offers no route by default, and names a route that is malformed or names an adapter that is not configured", () => {
    expect(loadConfig(dataDir, {}).config.send).toEqual({ routes: [], timeoutSeconds: 30 });
    const err = errorFor(JSON.stringify({ adapters: { slack: { type: "cli" } }, send: { routes: [{ from: "slack/C1", to: ["slak/C2", "slack/*"] }, { from: "C1", to: ["slack/C3"] }] } }));
    expect(err.message.split("\n")).toEqual([
      `${file}: /send/routes/1/from: expected "<adapter>/<channelId>" or "<adapter>/*", got "C1"`,
      `${file}: /send/routes/0/to/0: no adapter "slak" in adapters (adapters: slack), got "slak/C2"`,
    ]);
    expect(errorFor(JSON.stringify({ send: { routes: [{ from: "cli/local", to: [] }] } })).message).toMatch(/\/send\/routes\/0\/to: .*1/);
  });
});

describe("issue-3 settings", () => {
  it("rejects a bad busy mode and a channel key that is not qualified", () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-cfg-"));
    writeFileSync(join(dir, "config.json"), JSON.stringify({ adapters: { cli: { type: "cli", busy: "panic" } }, channels: { local: { model: "a/b" } } }));
    expect(() => loadConfig(dir, {})).toThrow(/\/adapters\/cli\/busy[\s\S]*\/channels\/local/);
  });
});

describe("platform adapters", () => {
  it("reads slack, discord and telegram adapters, with tokens from the environment", () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-cfg-"));
    writeFileSync(
      join(dir, "config.json"),
      JSON.stringify({
        adapters: {
          "slack-acme": { type: "slack", botToken: "env:ACME_BOT", appToken: "xapp-literal", admins: ["U1"], dm: "everyone" },
          discord: { type: "discord", botToken: "env:DISCORD_TOKEN", busy: "reject" },
          tg: { type: "telegram", botToken: "env:TG_TOKEN", admins: ["42"], dm: "none" },
          wa: { type: "whatsapp", accessToken: "env:WA_TOKEN", appSecret: "env:WA_SECRET", verifyToken: "verify-me", phoneNumberId: "1098765" },
        },
      }),
    );
    const { config } = loadConfig(dir, { ACME_BOT: "xoxb-from-env", DISCORD_TOKEN: "dtok", TG_TOKEN: "123:abc", WA_TOKEN: "EAAG", WA_SECRET: "s3cret" }, { adapters: ["slack-acme", "discord", "tg", "wa"] });
    expect(config.adapters["slack-acme"]).toMatchObject({ type: "slack", botToken: "xoxb-from-env", appToken: "xapp-literal" });
    expect(config.adapters.discord).toMatchObject({ type: "discord", botToken: "dtok", busy: "reject" });
    expect(config.adapters.tg).toMatchObject({ type: "telegram", botToken: "123:abc", admins: ["42"], dm: "none" });
    expect(config.adapters.wa).toMatchObject({ type: "whatsapp", accessToken: "EAAG", appSecret: "s3cret", verifyToken: "verify-me", phoneNumberId: "1098765" });
    expect(() => loadConfig(dir, { ACME_BOT: "x" }, { adapters: ["wa"] })).toThrow(/\/adapters\/wa\/accessToken: environment variable WA_TOKEN is not set/);
    expect(() => loadConfig(dir, { ACME_BOT: "x" }, { adapters: ["discord"] })).toThrow(/\/adapters\/discord\/botToken: environment variable DISCORD_TOKEN is not set/);
  });

  it("resolves only the secrets the service asks for, and never needs the others", () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-cfg-"));
    writeFileSync(
      join(dir, "config.json"),
      JSON.stringify({
        adapters: { slack: { type: "slack", botToken: "env:SLACK_BOT_TOKEN", appToken: "env:SLACK_APP_TOKEN" }, discord: { type: "discord", botToken: "env:DISCORD_BOT_TOKEN" } },
        sandbox: { type: "bwrap", env: { GIT_AUTHOR_NAME: "mom", GH_TOKEN: "env:MOM_GH_TOKEN" } },
      }),
    );
    const env = { SLACK_BOT_TOKEN: "xoxb-1", SLACK_APP_TOKEN: "xapp-1", DISCORD_BOT_TOKEN: "d-1", MOM_GH_TOKEN: "gh-1" };
    // The runner and the scheduler: no platform token at all, even when none is set.
    const runner = loadConfig(dir, { MOM_GH_TOKEN: "gh-1" }, { sandbox: true }).config;
    expect(JSON.stringify(runner)).not.toMatch(/xoxb-1|xapp-1|d-1/);
    expect(runner.sandbox.env).toEqual({ GIT_AUTHOR_NAME: "mom", GH_TOKEN: "gh-1" });
    expect(JSON.stringify(loadConfig(dir, {}).config)).not.toMatch(/xoxb-1|xapp-1|d-1|gh-1/);
    // An ingress: its own tokens only.
    const slack = loadConfig(dir, env, { adapters: ["slack"] }).config;
    expect(slack.adapters.slack).toMatchObject({ botToken: "xoxb-1", appToken: "xapp-1" });
    expect(slack.adapters.discord).toMatchObject({ botToken: "env:DISCORD_BOT_TOKEN" });
    expect(slack.sandbox.env?.GH_TOKEN).toBe("env:MOM_GH_TOKEN");
    expect(() => loadConfig(dir, { SLACK_BOT_TOKEN: "x", SLACK_APP_TOKEN: "y" }, { adapters: ["discord"] })).toThrow(/\/adapters\/discord\/botToken: environment variable DISCORD_BOT_TOKEN is not set/);
    expect(unsetEnvRefs(loadConfig(dir, {}).config, { SLACK_APP_TOKEN: "y" })).toEqual([
      { path: "/adapters/slack/botToken", variable: "SLACK_BOT_TOKEN" },
      { path: "/adapters/discord/botToken", variable: "DISCORD_BOT_TOKEN" },
      { path: "/sandbox/env/GH_TOKEN", variable: "MOM_GH_TOKEN" },
    ]);
  });

  it("names a missing token", () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-cfg-"));
    writeFileSync(join(dir, "config.json"), JSON.stringify({ adapters: { s: { type: "slack", botToken: "xoxb" } } }));
    expect(() => loadConfig(dir, {})).toThrow(/\/adapters\/s.*appToken/);
    expect(() => loadConfig(dir, {}, { adapters: ["s"] })).toThrow(/\/adapters\/s.*appToken/);
  });
});

describe("scheduler settings", () => {
  it("fills defaults key by key and names a bad value", () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-cfg-"));
    writeFileSync(join(dir, "config.json"), JSON.stringify({ scheduler: { watch: "poll", graceMinutes: 5 } }));
    expect(loadConfig(dir, {}).config.scheduler).toEqual({ graceMinutes: 5, maxQueuedPerChannel: 100, maxPerMinutePerChannel: 10, watch: "poll", pollIntervalMs: 2000 });
    writeFileSync(join(dir, "config.json"), JSON.stringify({ scheduler: { watch: "inotify", pollIntervalMs: 10, maxPerMinutePerChannel: 0 } }));
    expect(() => loadConfig(dir, {})).toThrow(/\/scheduler\/watch: expected "events" \(file notifications plus polling\) or "poll"/);
    expect(() => loadConfig(dir, {})).toThrow(/\/scheduler\/pollIntervalMs: expected integer >= 100, got 10/);
    expect(() => loadConfig(dir, {})).toThrow(/\/scheduler\/maxPerMinutePerChannel: expected integer >= 1, got 0/);
  });
});

describe("auth order, channel pins and spend limits", () => {
  it("reads them and names a bad value", () => {
    const limits = { global: { day: { usd: 5 } }, adapters: { slack: { month: { tokens: 1000000 } } }, channels: { "cli/local": { day: { usd: 0.5, tokens: 20000 } } } };
    writeFileSync(file, JSON.stringify({ auth: { order: { anthropic: ["work", "personal"] } }, channels: { "cli/local": { authProfile: "personal" } }, limits }));
    const { config } = loadConfig(dataDir, {});
    expect(config.auth.order).toEqual({ anthropic: ["work", "personal"] });
    expect(config.channels["cli/local"]!.authProfile).toBe("personal");
    expect(config.limits).toEqual(limits);
    expect(loadConfig(mkdtempSync(join(tmpdir(), "mom-cfg-")), {}).config.limits).toEqual({});
    expect(errorFor(JSON.stringify({ limits: { global: { day: { usd: -1 } } } })).message).toContain("/limits/global/day/usd: expected a number of US dollars > 0, got -1");
    expect(errorFor(JSON.stringify({ limits: { global: { week: { usd: 1 } } } })).message).toContain('/limits/global/week: unknown key "week"');
    expect(errorFor(JSON.stringify({ auth: { order: { anthropic: "work" } } })).message).toContain("/auth/order/anthropic: expected an array of auth profile ids");
  });
});
