import { describe, expect, it } from "@jest/globals";
import { defaultConfig, saveAuthProfiles } from "@mom/config";
import { mkdtempSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { authConfigIssues, classifyRefusal, cooldownMs, credentialOrder, maskSecret, parseRetryAfter, ProfilesSource, resolveSecret, setupTokenProblem } from "./index.js";

const profile = (id: string, provider = "anthropic") => ({ id, provider, type: "api_key" as const, secret: `sk-${id}-0123456789abcdef` });

describe("credentialOrder", () => {
  it("pin, then auth.order, then the provider's other profiles in file order, then the environment", () => {
    const config = defaultConfig();
    config.auth.order = { anthropic: ["b", "a"] };
    config.channels = { "cli/local": { authProfile: "c" } };
    const profiles = [profile("a"), profile("x", "openai"), profile("b"), profile("c"), profile("d")];
    const ids = (channel?: string, hasDefault = true) => credentialOrder({ provider: "anthropic", channel, config, profiles, hasDefault }).map((c) => c.id);
    expect(ids("cli/local")).toEqual(["c", "b", "a", "d", "env"]);
    expect(ids("cli/other")).toEqual(["b", "a", "c", "d", "env"]);
    expect(ids(undefined, false)).toEqual(["b", "a", "c", "d"]);
    expect(credentialOrder({ provider: "openai", config, profiles, hasDefault: false }).map((c) => c.id)).toEqual(["x"]);
  });

  it("config references to unknown or foreign profiles are named with their path", () => {
    const config = defaultConfig();
    config.auth.order = { anthropic: ["a", "zz", "x"] };
    config.channels = { "cli/local": { authProfile: "nope" } };
    expect(authConfigIssues(config, [profile("a"), profile("x", "openai")])).toEqual([
      { path: "/auth/order/anthropic/1", message: 'no auth profile "zz" (profiles: a, x)' },
      { path: "/auth/order/anthropic/2", message: 'profile "x" is for provider "openai"' },
      { path: "/channels/cli/local/authProfile", message: 'no auth profile "nope" (profiles: a, x)' },
    ]);
  });
});

describe("refusals and cooldowns", () => {
  it("classifies 429, 401/403, 402 and billing wording; other errors do not rotate", () => {
    expect(classifyRefusal({ status: 429, message: "429 Rate limit reached" })).toBe("rate_limit");
    expect(classifyRefusal({ message: "429 Too many requests" })).toBe("rate_limit");
    expect(classifyRefusal({ status: 401, message: "401 invalid x-api-key" })).toBe("auth");
    expect(classifyRefusal({ status: 403, message: "403 Forbidden" })).toBe("auth");
    expect(classifyRefusal({ status: 402, message: "402 Payment Required" })).toBe("billing");
    expect(classifyRefusal({ status: 400, message: "400 Your credit balance is too low to access the Anthropic API" })).toBe("billing");
    expect(classifyRefusal({ status: 429, message: "429 You exceeded your current quota, please check your plan and billing details" })).toBe("billing");
    expect(classifyRefusal({ status: 500, message: "500 internal error" })).toBeUndefined();
    expect(classifyRefusal({ status: 400, message: "400 bad request" })).toBeUndefined();
    expect(classifyRefusal({ message: "fetch failed" })).toBeUndefined();
  });

  it("uses retry-after when given, else doubles per failure in a row with ±20% jitter, capped", () => {
    expect(cooldownMs("rate_limit", 1, 42_000)).toBe(42_000);
    expect(cooldownMs("rate_limit", 1, undefined, () => 0.5)).toBe(15_000);
    expect(cooldownMs("rate_limit", 1, undefined, () => 0)).toBe(12_000);
    expect(cooldownMs("rate_limit", 1, undefined, () => 1)).toBe(18_000);
    expect(cooldownMs("rate_limit", 3, undefined, () => 0.5)).toBe(60_000);
    expect(cooldownMs("rate_limit", 30, undefined, () => 0.5)).toBe(600_000);
    expect(cooldownMs("auth", 1, undefined, () => 0.5)).toBe(600_000);
    expect(cooldownMs("billing", 2, undefined, () => 0.5)).toBe(7_200_000);
    expect(parseRetryAfter("30")).toBe(30_000);
    expect(parseRetryAfter("1.5")).toBe(1500);
    expect(parseRetryAfter(new Date(Date.now() + 60_000).toUTCString())).toBeGreaterThan(55_000);
    expect(parseRetryAfter("soon")).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
  });
});

describe("secrets", () => {
  it("resolves literal, env: and file: references and names what is missing, never a value", () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-secret-"));
    writeFileSync(join(dir, "key.txt"), "sk-from-file\n");
    expect(resolveSecret("sk-literal", dir)).toBe("sk-literal");
    expect(resolveSecret("env:MY_KEY", dir, { MY_KEY: "sk-from-env" })).toBe("sk-from-env");
    expect(resolveSecret("file:key.txt", dir)).toBe("sk-from-file");
    expect(() => resolveSecret("env:MY_KEY", dir, {})).toThrow("environment variable MY_KEY is not set");
    expect(() => resolveSecret("file:nope.txt", dir)).toThrow(/cannot read .*nope\.txt: ENOENT/);
  });

  it("masks to a known prefix and the last four characters", () => {
    expect(maskSecret("sk-ant-api03-abcdefghijklmnopqrstuvwxyz-WXYZ")).toBe("sk-ant-api03-…WXYZ");
    expect(maskSecret("sk-ant-oat01-abcdefghijklmnopqrstuvwxyz0123")).toBe("sk-ant-oat01-…0123");
    expect(maskSecret("AIzaSyA-abcdefghijklmnop")).toBe("AIza…mnop");
    expect(maskSecret("sk-ab12-cd34-ef56-0123456789")).toBe("sk-…6789");
    expect(maskSecret("short")).toBe("…");
    expect(maskSecret("env:ANTHROPIC_API_KEY")).toBe("env:ANTHROPIC_API_KEY");
    expect(maskSecret("file:/run/secrets/key")).toBe("file:/run/secrets/key");
  });

  it("checks a setup token's shape", () => {
    expect(setupTokenProblem(`sk-ant-oat01-${"a".repeat(90)}`)).toBeUndefined();
    expect(setupTokenProblem("sk-ant-api03-xyz")).toMatch(/API key, not a setup token/);
    expect(setupTokenProblem("hello")).toMatch(/starts with sk-ant-oat01-/);
    expect(setupTokenProblem("sk-ant-oat01-abc def")).toMatch(/cut short or has stray characters/);
  });
});

describe("ProfilesSource", () => {
  it("reads the file again when it changes and keeps the last good profiles when it turns invalid", () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-profiles-"));
    const file = join(dir, "auth-profiles.json");
    const errors: string[] = [];
    const source = new ProfilesSource(file, (e) => errors.push(e.message), 0);
    expect(source.profiles()).toEqual([]);
    saveAuthProfiles(file, { profiles: [profile("a")] });
    expect(source.profiles().map((p) => p.id)).toEqual(["a"]);
    saveAuthProfiles(file, { profiles: [profile("a"), profile("b")] });
    expect(source.profiles().map((p) => p.id)).toEqual(["a", "b"]);
    writeFileSync(`${file}.tmp`, '{ "profiles": [ { "id": "c" } ] }');
    renameSync(`${file}.tmp`, file);
    expect(source.profiles().map((p) => p.id)).toEqual(["a", "b"]);
    expect(errors).toEqual([expect.stringMatching(/auth-profiles\.json: \/profiles\/0\/provider: missing required key "provider"/)]);
    expect(() => new ProfilesSource(file)).toThrow(/missing required key "provider"/);
  });
});

describe("resolveCredentialRef", () => {
  const profiles = () => [{ id: "gh", secret: "env:GH_TOKEN_TEST" }];
  it("resolves env:, file: and profile: references, and refuses literals", async () => {
    const { resolveCredentialRef } = await import("./secret.js");
    const env = { GH_TOKEN_TEST: " tok " };
    expect(resolveCredentialRef("profile:gh", "/nowhere", profiles, env)).toBe("tok");
    expect(resolveCredentialRef("env:GH_TOKEN_TEST", "/nowhere", profiles, env)).toBe("tok");
    expect(() => resolveCredentialRef("profile:nope", "/nowhere", profiles, env)).toThrow('no auth profile "nope"');
    expect(() => resolveCredentialRef("ghp_literal", "/nowhere", profiles, env)).toThrow("must be a reference");
    expect(() => resolveCredentialRef("file:missing", "/nowhere", profiles, env)).toThrow("cannot read /nowhere/missing");
  });
});
