import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startFakeLlm, startTestNats, type FakeLlm, type TestNats } from "@mom/testing";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Bus } from "@mom/bus";
import { createLogger, loadConfig } from "@mom/config";
import { busOptions } from "@mom/bus";
import { runDoctor } from "./doctor.js";

describe("mom doctor", () => {
  let nats: TestNats;
  let llm: FakeLlm;
  let dir: string;
  beforeAll(async () => {
    nats = await startTestNats();
    llm = await startFakeLlm();
    dir = mkdtempSync(join(tmpdir(), "mom-doctor-"));
    delete process.env.ANTHROPIC_API_KEY;
    delete process.env.ANTHROPIC_OAUTH_TOKEN;
    delete process.env.NATS_URL;
  });
  afterAll(async () => {
    await llm.close();
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const byName = (checks: Awaited<ReturnType<typeof runDoctor>>) => Object.fromEntries(checks.map((c) => [c.name, c]));

  it("passes with a reachable JetStream and a configured model", async () => {
    const d = join(dir, "good");
    require_dir(d);
    writeFileSync(join(d, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(join(d, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { url: nats.url, namespace: nats.namespace } }));
    const checks = byName(await runDoctor(d));
    expect(checks.config!.ok).toBe(true);
    expect(checks.model).toMatchObject({ ok: true, detail: expect.stringContaining("credentials found, a one-word test call answered") });
    expect(llm.requests.length).toBeGreaterThan(0);
    expect(checks.NATS).toMatchObject({ ok: true, detail: expect.stringMatching(/nats-server \d+\.\d+.*JetStream on.*scale-out available/) });
    expect(checks.sandbox).toMatchObject({ ok: true, detail: expect.stringMatching(/^bwrap \(auto: bubblewrap works here\); network off/) });
    // Which per-command limits hold on this host, and how.
    expect(checks["sandbox limits"]!.detail).toMatch(/memory: 1024 MiB per (command \(cgroup v[12] memory\)|process)/);
    expect(checks["sandbox limits"]!.detail).toContain("tmp: /tmp is a 256 MiB tmpfs per command");
    expect(checks["sandbox limits"]!.detail).toContain("disk: 2048 MiB per channel directory");
    expect(checks.secrets).toBeUndefined();
  });

  it("says loudly when tools run on the host, and names unset secrets without needing them", async () => {
    const d = join(dir, "host");
    require_dir(d);
    writeFileSync(join(d, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(
      join(d, "config.json"),
      JSON.stringify({ model: "fake/fake-model", nats: { url: nats.url, namespace: nats.namespace }, sandbox: { type: "host" }, adapters: { acme: { type: "slack", botToken: "env:MOM_DOCTOR_UNSET_BOT", appToken: "xapp-1" } } }),
    );
    const checks = byName(await runDoctor(d));
    expect(checks.config!.ok).toBe(true);
    expect(checks.sandbox).toMatchObject({ ok: false, optional: true, detail: expect.stringContaining("NO CHANNEL ISOLATION — tools run unsandboxed") });
    expect(checks.secrets).toMatchObject({ optional: true, detail: expect.stringContaining("MOM_DOCTOR_UNSET_BOT (/adapters/acme/botToken, needed by `mom ingress acme`)") });
  });

  it("names what to set when credentials are missing and when NATS is down", async () => {
    const d = join(dir, "nocreds");
    require_dir(d);
    writeFileSync(join(d, "config.json"), JSON.stringify({ nats: { url: "nats://127.0.0.1:1" } }));
    const checks = byName(await runDoctor(d));
    expect(checks.model).toMatchObject({ ok: false, detail: expect.stringContaining("ANTHROPIC_OAUTH_TOKEN or ANTHROPIC_API_KEY") });
    expect(checks.NATS).toMatchObject({ ok: false, detail: expect.stringContaining("nats://127.0.0.1:1") });
  });

  it("makes a real model call: an endpoint nobody listens on is ✗", async () => {
    const d = join(dir, "deaf");
    require_dir(d);
    const models = llm.modelsJson() as { providers: Record<string, { baseUrl: string }> };
    for (const p of Object.values(models.providers)) p.baseUrl = "http://127.0.0.1:1/v1";
    writeFileSync(join(d, "models.json"), JSON.stringify(models));
    writeFileSync(join(d, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { url: nats.url, namespace: nats.namespace } }));
    const checks = byName(await runDoctor(d));
    expect(checks.model).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/^credentials found, but a one-word test call failed: model fake\/fake-model at http:\/\/127\.0\.0\.1:1\/v1: connection refused \(ECONNREFUSED\) — nothing listens there: start the server .* or correct providers\.fake\.baseUrl in \S+models\.json$/),
    });
    expect(checks.model!.detail).not.toContain("\n");
  });

  it("says a refused key is a refused key (401), naming the endpoint and where the key is set", async () => {
    const d = join(dir, "denied");
    require_dir(d);
    writeFileSync(join(d, "models.json"), JSON.stringify(llm.modelsJson()));
    writeFileSync(join(d, "config.json"), JSON.stringify({ model: "fake/fake-model", nats: { url: nats.url, namespace: nats.namespace } }));
    llm.enqueue({ error: { status: 401, message: "Incorrect API key provided" } });
    const checks = byName(await runDoctor(d));
    expect(checks.model).toMatchObject({
      ok: false,
      detail: expect.stringContaining(`model fake/fake-model at ${llm.baseUrl}: credentials refused (HTTP 401) (Incorrect API key provided) — check the key: providers.fake.apiKey in ${join(d, "models.json")}`),
    });
  });

  it("says a model the server does not have is not found (404), and how to get it", async () => {
    const d = join(dir, "nomodel");
    require_dir(d);
    writeFileSync(join(d, "models.json"), JSON.stringify(llm.modelsJson({ modelId: "llama3" })));
    writeFileSync(join(d, "config.json"), JSON.stringify({ model: "fake/llama3", nats: { url: nats.url, namespace: nats.namespace } }));
    llm.enqueue({ error: { status: 404, message: 'model "llama3" not found, try pulling it first' } });
    const checks = byName(await runDoctor(d));
    expect(checks.model).toMatchObject({ ok: false, detail: expect.stringContaining(`model fake/llama3 at ${llm.baseUrl}: model not found (HTTP 404)`) });
    expect(checks.model!.detail).toContain("`ollama pull llama3`");
  });

  it("does not create a mistyped data dir, and says when config.json is missing", async () => {
    const typo = join(dir, "typo");
    const checks = await runDoctor(typo);
    expect(checks).toEqual([{ name: "config", ok: false, detail: expect.stringContaining(`no data dir ${typo}`) }]);
    expect(existsSync(typo)).toBe(false);
    const empty = join(dir, "empty");
    require_dir(empty);
    writeFileSync(join(empty, "models.json"), JSON.stringify(llm.modelsJson()));
    const c = byName(await runDoctor(empty));
    expect(c.config).toMatchObject({ ok: false, optional: true, detail: expect.stringContaining(`no ${join(empty, "config.json")}: built-in defaults`) });
    expect(existsSync(join(empty, "workspace"))).toBe(false);
  });

  it("shows each stream's retention, what it holds, and limits the server does not have yet", async () => {
    const d = join(dir, "retention");
    require_dir(d);
    const namespace = `${nats.namespace}-ret`;
    const streams = { maxAgeHours: 48, byStream: { receipts: { maxAgeHours: 720, maxBytes: 10 * 1024 * 1024 } } };
    writeFileSync(join(d, "config.json"), JSON.stringify({ nats: { url: nats.url, namespace, streams } }));
    const before = byName(await runDoctor(d)).retention!;
    expect(before.detail).toContain(`${namespace.toUpperCase().replace(/-/g, "_")}_IN 2d, no size limit (not created yet)`);

    const loaded = loadConfig(d);
    const bus = await Bus.connect({ ...busOptions(loaded, nats.url, "doctor-test", createLogger("t", { level: "silent" })), streams: { maxAgeMs: 3_600_000 } });
    await bus.provision();
    await bus.publish(bus.subjects.channel("in", { adapter: "cli", channelId: "local" }), { hello: 1 }, "m1");
    await bus.drain();
    const after = byName(await runDoctor(d)).retention!;
    expect(after).toMatchObject({ ok: true, optional: true });
    expect(after.detail).toMatch(/_IN 2d, no size limit — server has 1h, no size limit \(1 messages, \d+ bytes, oldest \d{4}-/);
    expect(after.detail).toContain("_RECEIPTS 30d, 10 MB — server has 1h, no size limit (0 messages, 0 bytes)");
    expect(after.detail).toContain("the next service to start applies config.json");

    const applied = await Bus.connect(busOptions(loaded, nats.url, "doctor-test", createLogger("t", { level: "silent" })));
    await applied.provision();
    await applied.drain();
    const now = byName(await runDoctor(d)).retention!;
    expect(now.detail).toContain("_RECEIPTS 30d, 10 MB (0 messages, 0 bytes)");
    expect(now.detail).not.toContain("server has");
  });

  it("stops at a bad config, naming file and field", async () => {
    const d = join(dir, "bad");
    require_dir(d);
    writeFileSync(join(d, "config.json"), JSON.stringify({ runner: { idleEvictMinutes: "soon" } }));
    const checks = await runDoctor(d);
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatchObject({ name: "config", ok: false });
    expect(checks[0]!.detail).toMatch(/config\.json: \/runner\/idleEvictMinutes: expected integer/);
  });
});

function require_dir(d: string) {
  rmSync(d, { recursive: true, force: true });
  mkdirSync(d, { recursive: true });
}
