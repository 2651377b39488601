import { describe, expect, it } from "@jest/globals";
import { isNatsUrl, parseModelRef } from "./index.js";

describe("parseModelRef", () => {
  it("splits at the first slash", () => {
    expect(parseModelRef("anthropic/claude-sonnet-4-5")).toEqual({ provider: "anthropic", modelId: "claude-sonnet-4-5" });
    expect(parseModelRef("openrouter/meta/llama")).toEqual({ provider: "openrouter", modelId: "meta/llama" });
  });

  it("rejects refs without both parts, naming the form", () => {
    for (const bad of ["claude", "/claude", "anthropic/", "", "anthropic/claude sonnet"]) {
      expect(() => parseModelRef(bad)).toThrow('expected "<provider>/<modelId>"');
    }
  });
});

describe("isNatsUrl", () => {
  it("accepts nats/tls/ws urls, host:port and lists", () => {
    for (const ok of ["nats://127.0.0.1:4222", "tls://nats.example:4443", "wss://h/path", "localhost:4222", "nats://a:1, nats://b:2", "nats://user:pw@h:4222"]) {
      expect([ok, isNatsUrl(ok)]).toEqual([ok, true]);
    }
  });

  it("rejects other schemes and junk", () => {
    for (const bad of ["http://h:4222", "", "nats://", "a b", "nats://a:1,"]) expect([bad, isNatsUrl(bad)]).toEqual([bad, false]);
  });
});
