import { afterEach, describe, expect, it } from "@jest/globals";
import { CooldownBoard } from "@mom/auth";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startStack, type Stack } from "../support/stack.js";
import { outboundEvents } from "../support/streams.js";
import { connectionOf } from "../../libs/bus/src/bus.js"; // the NATS handles behind a Bus: tests and benches only

// Rotation of auth profiles against the fake LLM answering per API key: real NATS (cooldowns in
// KV), the real runner and CLI ingress.
let s: Stack | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
  delete process.env.MOM_TEST_KEY_B;
});

const keyOf = (st: Stack, i: number) => String(st.llm.requests[i]!.headers.authorization).replace("Bearer ", "");

async function stackWithProfiles(profiles: object[], config: object = {}): Promise<Stack> {
  s = await startStack({ runner: false, config });
  writeFileSync(join(s.dataDir, "auth-profiles.json"), JSON.stringify({ profiles }), { mode: 0o600 });
  await s.startRunner();
  return s;
}

const AB = [
  { id: "a", provider: "fake", type: "api_key", secret: "key-a-0123456789" },
  { id: "b", provider: "fake", type: "api_key", secret: "env:MOM_TEST_KEY_B" },
];

describe("auth profile rotation", () => {
  it("a 429 with retry-after cools the first profile down for that long and the run goes on with the next", async () => {
    process.env.MOM_TEST_KEY_B = "key-b-0123456789";
    const st = await stackWithProfiles(AB, { auth: { order: { fake: ["a", "b"] } } });
    st.llm.byKey("key-a-0123456789", { error: { status: 429, message: "Rate limit reached", retryAfterSeconds: 60 } });
    st.llm.enqueue({ text: "answered with b" });
    const before = Date.now();
    st.type("hello");
    await st.output.waitForAnswer("answered with b");
    expect([keyOf(st, 0), keyOf(st, 1)]).toEqual(["key-a-0123456789", "key-b-0123456789"]);
    expect(st.output.text).toContain("↻ fake credential a refused (rate limit), continuing with b");

    const rotated = (await outboundEvents(st.bus)).map((e) => e.event).find((e) => e.type === "auth.profile.rotated");
    expect(rotated).toMatchObject({ provider: "fake", from: "a", to: "b", reason: "rate_limit" });
    const until = Date.parse((rotated as { until: string }).until);
    expect(until - before).toBeGreaterThanOrEqual(59_000);
    expect(until - Date.now()).toBeLessThanOrEqual(60_000);

    const receipts = readFileSync(join(st.loaded.paths.workspaceDir, "channels", "cli", "local", "receipts.jsonl"), "utf8");
    expect(receipts).toContain('"type":"auth.profile.rotated"');
    expect(receipts).toContain("fake a -> b: rate_limit");

    // The cooldown holds: the next run starts with b, a is not asked again.
    st.llm.enqueue({ text: "second answer" });
    st.type("again");
    await st.output.waitFor("second answer");
    expect(st.llm.requests.map((r) => String(r.headers.authorization))).toEqual(["Bearer key-a-0123456789", "Bearer key-b-0123456789", "Bearer key-b-0123456789"]);
    // The tag that files a response under its call never leaves the runner.
    expect(st.llm.requests.flatMap((r) => Object.keys(r.headers)).filter((h) => h.startsWith("x-mom"))).toEqual([]);
  });

  it("a 429 without retry-after backs off about 15 s (with jitter); 401 and 402 rotate too", async () => {
    process.env.MOM_TEST_KEY_B = "key-b-0123456789";
    const st = await stackWithProfiles([...AB, { id: "c", provider: "fake", type: "token", secret: "key-c-0123456789" }]);
    st.llm.byKey("key-a-0123456789", { error: { status: 429, message: "Too many requests" } });
    st.llm.byKey("key-b-0123456789", { error: { status: 401, message: "Incorrect API key provided" } });
    st.llm.byKey("key-c-0123456789", { error: { status: 402, message: "Your credit balance is too low to access the API" } });
    st.llm.enqueue({ text: "answered by env" });
    st.type("hello");
    await st.output.waitFor("answered by env");
    // a, b, c in file order, then the provider's own key from models.json ("env").
    expect(st.llm.requests.map((r) => String(r.headers.authorization))).toEqual([
      "Bearer key-a-0123456789",
      "Bearer key-b-0123456789",
      "Bearer key-c-0123456789",
      "Bearer fake-key",
    ]);
    const rotations = (await outboundEvents(st.bus)).map((e) => e.event).filter((e) => e.type === "auth.profile.rotated");
    expect(rotations.map((r) => r.type === "auth.profile.rotated" && [r.from, r.to, r.reason])).toEqual([
      ["a", "b", "rate_limit"],
      ["b", "c", "auth"],
      ["c", "env", "billing"],
    ]);
    const board = await CooldownBoard.open(st.bus);
    const left = (until: number | undefined) => (until ?? 0) - Date.now();
    expect(left(await board.coolingUntil("fake", "a"))).toBeGreaterThan(10_000);
    expect(left(await board.coolingUntil("fake", "a"))).toBeLessThanOrEqual(18_000);
    expect(left(await board.coolingUntil("fake", "b"))).toBeGreaterThan(7 * 60_000);
    expect(left(await board.coolingUntil("fake", "c"))).toBeGreaterThan(47 * 60_000);
    expect(await board.coolingUntil("fake", "env")).toBeUndefined();
  });

  it("when every credential is cooling down the run ends saying when to retry, without calling the model again", async () => {
    process.env.MOM_TEST_KEY_B = "key-b-0123456789";
    const st = await stackWithProfiles(AB);
    st.llm.byKey("key-a-0123456789", { error: { status: 429, message: "Rate limit reached", retryAfterSeconds: 600 } });
    st.llm.byKey("key-b-0123456789", { error: { status: 429, message: "Rate limit reached", retryAfterSeconds: 300 } });
    st.llm.byKey("fake-key", { error: { status: 429, message: "Rate limit reached", retryAfterSeconds: 900 } });
    st.type("hello");
    await st.output.waitFor(/✗ Error: Every fake credential is cooling down.*Try again after \d\d:\d\d UTC \(in 5 min\)/);
    expect(st.llm.requests).toHaveLength(3);
    // No pi auto-retry either: the message is mom's, not the provider's.
    expect(st.output.text).not.toContain("retry 1/");
    st.type("still there?");
    await st.output.waitFor(/(Every fake credential is cooling down[\s\S]*){2}/);
    expect(st.llm.requests).toHaveLength(3);
  });

  it("works with auth profiles alone: a built-in provider, no key in the environment", async () => {
    // pi's built-in groq models speak the OpenAI chat API; models.json only moves them to the fake.
    const groqKey = process.env.GROQ_API_KEY;
    delete process.env.GROQ_API_KEY;
    try {
      s = await startStack({
        runner: false,
        config: { model: "groq/gemma2-9b-it" },
        models: (json) => ({ providers: { groq: { baseUrl: (json.providers.fake as unknown as { baseUrl: string }).baseUrl, compat: { supportsDeveloperRole: false, supportsReasoningEffort: false, supportsStore: false } } } }),
      });
      writeFileSync(join(s.dataDir, "auth-profiles.json"), JSON.stringify({ profiles: [{ id: "g", provider: "groq", type: "api_key", secret: "key-g-0123456789" }] }), { mode: 0o600 });
      await s.startRunner();
      s.llm.enqueue({ text: "answered with g" });
      s.type("hello");
      await s.output.waitForAnswer("answered with g"); // the run ends after pi's compaction
      expect(String(s.llm.requests[0]!.headers.authorization)).toBe("Bearer key-g-0123456789");
      s.llm.byKey("key-g-0123456789", { error: { status: 429, message: "Rate limit reached", retryAfterSeconds: 300 } });
      s.type("again");
      await s.output.waitFor(/✗ Error: Every groq credential is cooling down.*\(in 5 min\)/);
      // gemma2's 8k window makes pi compact after the first answer: that summary request (no
      // tools) uses the profile too, though nothing in the environment has a groq key.
      const agentCalls = s.llm.requests.filter((r) => r.tools);
      expect(agentCalls).toHaveLength(2);
      expect(s.llm.requests.every((r) => r.headers.authorization === "Bearer key-g-0123456789")).toBe(true);
    } finally {
      if (groqKey !== undefined) process.env.GROQ_API_KEY = groqKey;
    }
  });

  it("a channel pin goes first; secrets never reach the bus or receipts", async () => {
    process.env.MOM_TEST_KEY_B = "key-b-0123456789";
    const st = await stackWithProfiles(AB, { auth: { order: { fake: ["a", "b"] } }, channels: { "cli/local": { authProfile: "b" } } });
    st.llm.byKey("key-b-0123456789", { error: { status: 403, message: "Forbidden" } });
    st.llm.enqueue({ text: "done by a" });
    st.type("hello");
    await st.output.waitFor("done by a");
    expect(st.llm.requests.map((r) => String(r.headers.authorization))).toEqual(["Bearer key-b-0123456789", "Bearer key-a-0123456789"]);
    const everything = JSON.stringify(await allStreamMessages(st));
    expect(everything).toContain("auth.profile.rotated");
    for (const secret of ["key-a-0123456789", "key-b-0123456789", "fake-key"]) expect(everything).not.toContain(secret);
    const receipts = readFileSync(join(st.loaded.paths.workspaceDir, "channels", "cli", "local", "receipts.jsonl"), "utf8");
    for (const secret of ["key-a-0123456789", "key-b-0123456789"]) expect(receipts).not.toContain(secret);
  });
});

/** Every message of every stream of the test's namespace (including KV and ledger streams). */
async function allStreamMessages(st: Stack): Promise<string[]> {
  const out: string[] = [];
  for await (const info of connectionOf(st.bus).jsm.streams.list()) {
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await connectionOf(st.bus).jsm.streams.getMessage(info.config.name, { seq }).catch(() => undefined);
      if (m) out.push(`${m.subject} ${new TextDecoder().decode(m.data)}`);
    }
  }
  return out;
}
