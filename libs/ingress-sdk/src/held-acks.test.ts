import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { plainDialect } from "@mom/render";
import { spawnNatsServer, type TestNats } from "@mom/testing";
import { json } from "node:stream/consumers";
import { pino } from "pino";
import { Type } from "typebox";
import { HeldAcknowledgements, whenStored } from "./held-acks.js";
import type { IngressDefinition, PlatformConnection } from "./platform.js";
import { type RunningIngress, startIngress } from "./start-ingress.js";
import { ScriptedMom } from "./testing/scripted-mom.js";
import { replyText, serveWebhook, type WebhookServer } from "./webhook-server.js";

const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms));

describe("HeldAcknowledgements: a platform's acknowledgement waits for the store", () => {
  it("waits for what is not stored yet, then leaves nothing out", async () => {
    const held = new HeldAcknowledgements<number>();
    let stored11!: () => void;
    held.track(10, Promise.resolve(true));
    held.track(11, new Promise<void>((r) => (stored11 = r)));
    let left: number[] | undefined;
    const asking = held.unstored((id) => id < 12).then((l) => (left = l));
    await tick();
    expect(left).toBeUndefined();
    stored11();
    await asking;
    expect(left).toEqual([]);
  });

  it("gives the failed ones once (the platform delivers them again, tracked anew), and only those `which` selects", async () => {
    const held = new HeldAcknowledgements<number>();
    held.track(20, Promise.resolve());
    held.track(21, Promise.reject(new Error("NATS away")));
    held.track(25, Promise.reject(new Error("NATS away")));
    expect(await held.unstored((id) => id < 24)).toEqual([21]);
    expect(await held.unstored((id) => id < 24)).toEqual([]);
    held.track(21, Promise.resolve());
    expect(await held.unstored()).toEqual([25]);
  });

  it("stops waiting at the deadline, on abort and at stop, giving what is still unsettled", async () => {
    const held = new HeldAcknowledgements<string>();
    held.track("a", new Promise(() => {}));
    const t0 = Date.now();
    expect(await held.unstored(undefined, { withinMs: 100 })).toEqual(["a"]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
    const abort = new AbortController();
    const asking = held.unstored(undefined, { signal: abort.signal });
    abort.abort();
    expect(await asking).toEqual(["a"]);
    const waiting = held.unstored();
    held.stop();
    expect(await waiting).toEqual(["a"]);
    expect(await held.unstored()).toEqual(["a"]); // stopped: no more waiting
  });

  it("whenStored: resolves once every handling did, rejects 503 when one failed or the deadline came first", async () => {
    let storedSecond!: () => void;
    let done = false;
    const storing = whenStored([Promise.resolve(true), new Promise<void>((r) => (storedSecond = r))], 5000).then(() => (done = true));
    await tick();
    expect(done).toBe(false);
    storedSecond();
    await storing;
    await expect(whenStored([Promise.resolve(), Promise.reject(new Error("NATS away"))])).rejects.toMatchObject({ status: 503, message: expect.stringContaining("1 of the 2 messages") });
    await expect(whenStored([new Promise(() => {})], 50)).rejects.toMatchObject({ status: 503 });
  });
});

// The primitive as an ingress uses it, on the SDK's shell and a real NATS: a webhook whose post of
// messages is answered only once they are stored. NATS away: the post is answered 503 (and so is
// the platform's re-send while the first store still retries), never 200; NATS back: the re-send
// is answered 200 and the message is on the bus once.
describe("a webhook answered once its messages are stored (shell + real NATS)", () => {
  const ADAPTER = "hook";
  const ANSWER_WITHIN_MS = 1500;
  let nats: TestNats;
  let mom: ScriptedMom;
  let ingress: RunningIngress;
  let server: WebhookServer;

  const definition: IngressDefinition = {
    platform: "hook",
    settings: Type.Object({}),
    connect(ctx): PlatformConnection {
      return {
        surface: { dialect: plainDialect(), drawEvent: async () => undefined },
        async start() {
          server = await serveWebhook({
            port: 0,
            host: "127.0.0.1",
            log: ctx.log,
            async handle(req, res) {
              const post = (await json(req)) as { messages: Array<{ id: string; chat: string; text: string }> };
              const handlings = post.messages.map((m) =>
                ctx.inbound.receive({ id: m.id, channelId: m.chat, text: m.text, timestamp: new Date().toISOString(), sender: { id: "u1", username: "ana", isBot: false }, isMention: true }),
              );
              await whenStored(handlings, ANSWER_WITHIN_MS);
              replyText(res, 200, "ok");
            },
          });
        },
        stop: async () => server?.close(),
      };
    },
  };
  const post = async (...messages: Array<{ id: string; text: string }>) => {
    const res = await fetch(`http://127.0.0.1:${server.port}/`, { method: "POST", body: JSON.stringify({ messages: messages.map((m) => ({ ...m, chat: "room" })) }) });
    return res.status;
  };
  const onBus = async (id: string) => (await mom.messages("room")).filter((m) => m.id === id).length;

  beforeAll(async () => {
    nats = await spawnNatsServer();
    mom = await ScriptedMom.connect({ natsUrl: nats.url, namespace: nats.namespace, adapter: ADAPTER });
    ingress = await startIngress(definition, {
      adapter: { adapter: ADAPTER, access: {}, maxAttachmentBytes: 1 << 20, settings: {} },
      bus: { url: nats.url, name: `ingress-${ADAPTER}`, namespace: nats.namespace, reconnectTimeWaitMs: 200, logger: pino({ level: "silent" }) },
      logger: pino({ level: "silent" }),
    });
  });
  afterAll(async () => {
    await ingress?.close();
    await mom?.close();
    await nats?.stop();
  });

  it("answers 200 once stored, 503 while NATS cannot store (the re-send too), and 200 to the re-send once it can", async () => {
    expect(await post({ id: "1", text: "before" }, { id: "2", text: "before too" })).toBe(200);
    expect([await onBus("1"), await onBus("2")]).toEqual([1, 1]);

    const outage = nats.restart!(3 * ANSWER_WITHIN_MS + 1000);
    await tick(100);
    const t0 = Date.now();
    expect(await post({ id: "3", text: "during" })).toBe(503);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(ANSWER_WITHIN_MS - 50);
    // The platform re-sends: the store of the first delivery is still retrying, so this one waits for it too.
    expect(await post({ id: "3", text: "during" })).toBe(503);
    await outage;
    let status = 0;
    for (let i = 0; i < 40 && status !== 200; i++) {
      status = await post({ id: "3", text: "during" });
      if (status !== 200) await tick(250);
    }
    expect(status).toBe(200);
    expect(await onBus("3")).toBe(1);
    expect(await post({ id: "3", text: "during" })).toBe(200); // known already: answered at once
    expect(await onBus("3")).toBe(1);
  }, 60_000);
});
