import { describe, expect, it } from "@jest/globals";
import { freePort, uniqueNamespace } from "@mom/testing";
import { JetStreamApiError, type PubAck } from "@nats-io/jetstream";
import { nanos } from "@nats-io/nats-core";
import { Bus } from "./bus.js";
import { DEFAULT_STREAM_SETTINGS } from "./options.js";
import { busesOnTestNats, collectDeadLetters, waitFor } from "./test-support/helpers.js";
import { connectionOf } from "./bus.js";

const { buses, server } = busesOnTestNats();

describe("Bus.connect", () => {
  it("fails fast with an error naming the URL when NATS is unreachable", async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    await expect(Bus.connect({ url, name: "nobody" })).rejects.toThrow(url);
  });

  it("rejects an invalid namespace before connecting", async () => {
    await expect(Bus.connect({ url: server().url, name: "x", namespace: "Bad.NS" })).rejects.toThrow(/namespace/);
  });

  it("exposes subjects for its namespace", async () => {
    const bus = await buses.open();
    expect(bus.subjects.namespace).toMatch(/^t-/);
    expect(bus.subjects.stream("IN")).toBe(`${bus.subjects.namespace.toUpperCase().replace(/-/g, "_")}_IN`);
  });
});

describe("provision", () => {
  it("creates the five streams with file storage, limits retention and the default limits", async () => {
    const bus = await buses.open();
    await bus.provision();
    const ns = bus.subjects.namespace;
    for (const [key, token] of [["IN", "in"], ["OUT", "out"], ["CTL", "ctl"], ["RECEIPTS", "receipts"], ["DLQ", "dlq"]] as const) {
      const { config } = await connectionOf(bus).jsm.streams.info(bus.subjects.stream(key));
      expect(config.subjects).toEqual([`${ns}.${token}.>`]);
      expect(config.storage).toBe("file");
      expect(config.retention).toBe("limits");
      expect(config.max_age).toBe(nanos(DEFAULT_STREAM_SETTINGS.maxAgeMs));
      expect(config.duplicate_window).toBe(nanos(2 * 60 * 1000));
    }
  });

  it("is idempotent, safe to race, and a later call with other settings updates the streams", async () => {
    const namespace = uniqueNamespace();
    const [a, b, c] = await Promise.all([buses.open({ namespace }), buses.open({ namespace }), buses.open({ namespace })]);
    await Promise.all([a.provision(), b.provision(), c.provision()]);
    await a.provision();
    const changed = await buses.open({ namespace, streams: { maxAgeMs: 3_600_000, duplicateWindowMs: 30_000, maxBytes: 10_000_000 } });
    await changed.provision();
    const { config } = await connectionOf(a).jsm.streams.info(a.subjects.stream("OUT"));
    expect(config.max_age).toBe(nanos(3_600_000));
    expect(config.duplicate_window).toBe(nanos(30_000));
    expect(config.max_bytes).toBe(10_000_000);
  });

  it("gives each stream its own max age and byte limit where set, the shared ones elsewhere", async () => {
    const bus = await buses.open({ streams: { maxAgeMs: 3_600_000, maxBytes: 5_000_000, byStream: { RECEIPTS: { maxAgeMs: 7_200_000 }, OUT: { maxBytes: 1_000_000 } } } });
    await bus.provision();
    const limits = async (key: "IN" | "OUT" | "RECEIPTS") => {
      const { config } = await connectionOf(bus).jsm.streams.info(bus.subjects.stream(key));
      return [config.max_age, config.max_bytes];
    };
    expect(await limits("IN")).toEqual([nanos(3_600_000), 5_000_000]);
    expect(await limits("RECEIPTS")).toEqual([nanos(7_200_000), 5_000_000]);
    expect(await limits("OUT")).toEqual([nanos(3_600_000), 1_000_000]);
    expect(await bus.streamSummary("OUT")).toEqual({ maxAgeMs: 3_600_000, maxBytes: 1_000_000, messages: 0, bytes: 0 });
  });

  it("drops the oldest messages once a stream is over its byte limit", async () => {
    const bus = await buses.open({ streams: { byStream: { CTL: { maxBytes: 4096 } } } });
    await bus.provision();
    const subject = bus.subjects.channel("ctl", { adapter: "cli", channelId: "local" });
    for (let i = 0; i < 40; i++) await bus.publish(subject, { i, pad: "x".repeat(200) }, `m${i}`);
    const summary = (await bus.streamSummary("CTL"))!;
    expect(summary.bytes).toBeLessThanOrEqual(4096);
    expect(summary.messages).toBeLessThan(40);
    expect(summary.firstTs).toEqual(expect.any(String));
    expect((await bus.lastMessage("CTL", subject))?.data).toMatchObject({ i: 39 });
  });

  it("clamps the duplicate window to max age", async () => {
    const bus = await buses.open({ streams: { maxAgeMs: 10_000, duplicateWindowMs: 60_000 } });
    await bus.provision();
    const { config } = await connectionOf(bus).jsm.streams.info(bus.subjects.stream("CTL"));
    expect(config.duplicate_window).toBe(nanos(10_000));
  });
});

describe("publish", () => {
  it("JSON-encodes, sets Nats-Msg-Id and reports duplicates inside the window", async () => {
    const bus = await buses.open();
    await bus.provision();
    const subject = bus.subjects.channel("out", { adapter: "cli", channelId: "local" });
    const first = await bus.publish(subject, { hello: "world" }, "run-1:0");
    const again = await bus.publish(subject, { hello: "world" }, "run-1:0");
    const other = await bus.publish(subject, { hello: "again" }, "run-1:1");
    expect(first).toEqual({ seq: 1, duplicate: false });
    expect(again).toEqual({ seq: 1, duplicate: true });
    expect(other).toEqual({ seq: 2, duplicate: false });
    const stored = await connectionOf(bus).jsm.streams.getMessage(bus.subjects.stream("OUT"), { seq: 1 });
    expect(stored?.json()).toEqual({ hello: "world" });
    expect(stored?.header.get("Nats-Msg-Id")).toBe("run-1:0");
  });

  // A clustered leader's answers while another copy of the msg-id is proposed and not yet stored
  // (a single server never gives them; test/chaos/msgid-in-flight.test.ts drives a real cluster there).
  describe("a msg-id in flight at the leader", () => {
    const inFlight2_10 = { stream: "S", seq: 0, duplicate: true };
    const inFlight2_11 = new JetStreamApiError({ code: 409, err_code: 10158, description: "duplicate message id is in process" });
    async function scripted(answers: Array<PubAck | Error>) {
      const bus = await buses.open();
      await bus.provision();
      const { js } = connectionOf(bus);
      const real = js.publish.bind(js);
      let asked = 0;
      js.publish = async (...args: Parameters<typeof js.publish>) => {
        const a = answers[asked++];
        if (a === undefined) return real(...args);
        if (a instanceof Error) throw a;
        return a;
      };
      return { bus, subject: bus.subjects.channel("in", { adapter: "cli", channelId: "a" }), asked: () => asked };
    }

    it("asks again until a sequence comes back: nats-server < 2.11's duplicate with seq 0, 2.11's error 10158", async () => {
      const { bus, subject, asked } = await scripted([inFlight2_10, inFlight2_11, inFlight2_10, { stream: "S", seq: 7, duplicate: true }]);
      expect(await bus.publish(subject, { n: 1 }, "tick@1")).toEqual({ seq: 7, duplicate: true });
      expect(asked()).toBe(4);
    });

    it("fails, like a timeout, when it stays in flight for the attempt's timeout (a copy lost in a leader change)", async () => {
      const { bus, subject, asked } = await scripted(Array.from({ length: 100 }, () => inFlight2_10));
      const started = Date.now();
      await expect(bus.publish(subject, { n: 1 }, "tick@1", { timeoutMs: 600 })).rejects.toThrow(/publish to .* \(msgId tick@1\) failed: .*msg-id tick@1 .* in flight, with nothing stored under it/);
      expect(Date.now() - started).toBeLessThan(1500);
      expect(asked()).toBeGreaterThan(2);
    });

    it("a single writer's msg-id held in flight for two attempts is sent under a fresh msg-id (2.10's refusal after a lost proposal); others keep failing", async () => {
      const bus = await buses.open();
      await bus.provision();
      const { js } = connectionOf(bus);
      const real = js.publish.bind(js);
      js.publish = async (...args: Parameters<typeof js.publish>) => (args[2]?.msgID === "run-9:3" ? ({ stream: "S", seq: 0, duplicate: true } as PubAck) : real(...args));
      const subject = bus.subjects.channel("out", { adapter: "cli", channelId: "a" });
      await expect(bus.publish(subject, { n: 1 }, "run-9:3", { timeoutMs: 300, retryForMs: 1500 })).rejects.toThrow(/in flight/);
      const done = await bus.publish(subject, { n: 1 }, "run-9:3", { timeoutMs: 300, retryForMs: 5000, freshIdWhenStuck: true });
      expect(done.seq).toBeGreaterThan(0);
      const stored = await connectionOf(bus).jsm.streams.getMessage(bus.subjects.stream("OUT"), { seq: done.seq });
      expect(stored?.header.get("Nats-Msg-Id")).toMatch(/^run-9:3~/);
    });

    it("stores it when the in-flight note is gone: this publish's copy is the one", async () => {
      const { bus, subject } = await scripted([inFlight2_10]);
      expect(await bus.publish(subject, { n: 1 }, "tick@1")).toEqual({ seq: 1, duplicate: false });
    });
  });

  it("requires a msgId and fails when no stream takes the subject", async () => {
    const bus = await buses.open();
    await expect(bus.publish(`${bus.subjects.namespace}.out.cli.x`, {}, "")).rejects.toThrow(/msgId/);
    await expect(bus.publish(`${bus.subjects.namespace}.out.cli.x`, {}, "m")).rejects.toThrow(/no stream takes this subject/);
  });
});

describe("deadLetter", () => {
  it("publishes a DeadLetter (utf8 or base64 payload) and logs a warn line with the reason", async () => {
    const bus = await buses.open();
    await bus.provision();
    const { letters } = await collectDeadLetters(bus, "ingress-cli");
    await bus.deadLetter("ingress-cli", { subject: "mom.in.cli.x", data: "not json", reason: "invalid JSON", msgId: "m-1" });
    await bus.deadLetter("ingress-cli", { subject: "mom.in.cli.y", data: new Uint8Array([0xff, 0xfe, 0x00]), reason: "binary" });
    await waitFor(() => letters.length === 2, 5000, "two dead letters");
    expect(letters[0]!.subject).toBe(bus.subjects.dlq("ingress-cli"));
    expect(letters[0]!.data).toMatchObject({ stage: "ingress-cli", subject: "mom.in.cli.x", reason: "invalid JSON", payload: "not json", payloadEncoding: "utf8", msgId: "m-1" });
    expect(letters[1]!.data).toMatchObject({ payload: Buffer.from([0xff, 0xfe, 0x00]).toString("base64"), payloadEncoding: "base64" });
    expect(letters[1]!.data.msgId).toBeUndefined();
    const warn = bus.logs.lines.find((l) => l.level === 40 && l.reason === "invalid JSON");
    expect(warn).toMatchObject({ stage: "ingress-cli", subject: "mom.in.cli.x", msgId: "m-1" });
    expect(String(warn?.msg)).toContain("invalid JSON");
  });

  it("rejects an invalid stage name", async () => {
    const bus = await buses.open();
    await expect(bus.deadLetter("Bad Stage", { subject: "s", data: "", reason: "r" })).rejects.toThrow(/stage/);
  });
});

describe("drain", () => {
  it("closes the connection, is idempotent, and refuses new consumptions", async () => {
    const bus = await buses.open();
    await bus.provision();
    await Promise.all([bus.drain(), bus.drain()]);
    await bus.drain();
    expect(connectionOf(bus).nc.isClosed()).toBe(true);
    await expect(
      bus.consume({ stream: "IN", durable: "late", filterSubject: bus.subjects.wildcard("in"), schema: {} as never, stage: "x", handler: async () => {} }),
    ).rejects.toThrow(/draining/);
  });
});

describe("NATS URLs with credentials", () => {
  it("lifts user:pass@ and token@ out of the URLs, never showing them", async () => {
    const { splitCredentials } = await import("./connect.js");
    expect(splitCredentials("nats://runner:s%40cret@nats:4222")).toEqual({
      servers: ["nats://nats:4222"],
      auth: { user: "runner", pass: "s@cret" },
      shown: "nats://nats:4222",
    });
    expect(splitCredentials("tok123@a:4222, nats://b:4222")).toEqual({ servers: ["a:4222", "nats://b:4222"], auth: { token: "tok123" }, shown: "a:4222,nats://b:4222" });
    expect(splitCredentials("nats://127.0.0.1:4222").auth).toEqual({});
  });
});

describe("connecting to a NATS server that requires a password", () => {
  it("works with the credentials in the URL and fails clearly without them", async () => {
    const { spawn } = await import("node:child_process");
    const { mkdtempSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const { findNatsServer } = await import("@mom/testing");
    const bin = findNatsServer();
    if (!bin) return; // NATS_URL-only environments cannot start a private server
    const port = await freePort();
    const store = mkdtempSync(join(tmpdir(), "mom-auth-"));
    const child = spawn(bin, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", store, "--user", "runner", "--pass", "pw"], { stdio: "ignore" });
    try {
      await waitFor(async () => {
        const b = await Bus.connect({ url: `nats://runner:pw@127.0.0.1:${port}`, name: "auth-ok", namespace: uniqueNamespace() }).catch(() => undefined);
        if (!b) return false;
        await b.provision();
        await b.drain();
        return true;
      }, 10_000);
      await expect(Bus.connect({ url: `nats://127.0.0.1:${port}`, name: "auth-missing" })).rejects.toThrow(/cannot connect to NATS at nats:\/\/127\.0\.0\.1/);
    } finally {
      child.kill("SIGKILL");
      rmSync(store, { recursive: true, force: true });
    }
  });
});
