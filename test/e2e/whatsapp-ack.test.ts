import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type FakeWhatsApp, freePort, startFakeWhatsApp } from "@mom/testing";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type IngressProcessStack, startIngressProcessStack } from "../support/ingress-process-stack.js";
import { sleep, until } from "../support/wait.js";

// Meta forgets a webhook post it got a 200 for, and re-sends one that failed or timed out, for
// days. So the WhatsApp ingress (`mom ingress wa`, its own process) answers a post only once its
// messages are stored on the bus. With NATS down (nothing can be stored) a post is answered 503
// after WEBHOOK_ACK_WITHIN_MS, never 200; Meta's re-send, held while the first store still
// retries, dies with the ingress (kill -9); once NATS and the ingress are back, the next re-send
// is answered 200 and the message is on the bus once and answered once. A post answered 503 whose
// store lands afterwards is not stored or answered twice when Meta re-sends it (msg-id dedupe);
// one re-sent after JetStream's duplicate window lands twice on the bus but is answered and logged
// once (the runner knows the message id).

const ADAPTER = "wa";
const ANA = { waId: "4917000000201", name: "Ana Lopez" };
/** The SDK's WEBHOOK_ACK_WITHIN_MS. */
const ACK_WITHIN_MS = 5000;
/** Long enough for a post to be answered 503, its re-send held, and the ingress killed meanwhile. */
const NATS_DOWN_MS = ACK_WITHIN_MS + 4000;
/** JetStream's duplicate window here (2 minutes by default; Meta re-sends for days). */
const DUPLICATE_WINDOW_S = 15;

describe("WhatsApp ingress: a webhook post is answered 200 only once its messages are stored", () => {
  let whatsapp: FakeWhatsApp;
  let stack: IngressProcessStack;

  beforeAll(async () => {
    whatsapp = await startFakeWhatsApp();
    const port = await freePort();
    whatsapp.webhookUrl = `http://127.0.0.1:${port}/webhook`;
    const settings = { type: "whatsapp", accessToken: "env:WA_TOKEN", appSecret: "env:WA_SECRET", verifyToken: whatsapp.verifyToken, phoneNumberId: whatsapp.phoneNumberId, apiUrl: whatsapp.url, webhookPort: port };
    const streams = { maxAgeHours: 1, duplicateWindowSeconds: DUPLICATE_WINDOW_S, replicas: 1 };
    stack = await startIngressProcessStack({ adapter: ADAPTER, settings, env: { WA_TOKEN: whatsapp.accessToken, WA_SECRET: whatsapp.appSecret }, ready: "whatsapp ingress receiving", streams });
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    await whatsapp?.close();
  });

  const answers = (id: string) => whatsapp.sentTo(ANA.waId).filter((m) => m.context === id && m.text?.startsWith("answer "));
  const stored = (id: string) => stack.stored(ANA.waId, id);
  /** Meta's re-send: the webhook's status, or "no answer" when the connection died. */
  const resend = (id: string) => whatsapp.redeliver(id).catch(() => "no answer" as const);

  it("NATS down: 503, not 200; the ingress killed while Meta's re-send waits; back up: the re-send is answered 200, stored once, answered once", async () => {
    const hello = await whatsapp.say(ANA, { text: "ask hello" });
    expect(hello.status).toBe(200);
    await until("the answer to hello", async () => answers(hello.id).length === 1, 30_000);

    const outage = stack.nats.restart!(NATS_DOWN_MS);
    await sleep(200);
    const t0 = Date.now();
    const during = await whatsapp.say(ANA, { text: "ask during" });
    expect({ status: during.status, afterMs: Date.now() - t0 >= ACK_WITHIN_MS - 200 }).toEqual({ status: 503, afterMs: true });
    // Meta posts it again: its first store still retries, so this post waits for it too, and the
    // ingress dies meanwhile — a zone outage takes the pod with it.
    const held = resend(during.id);
    await sleep(1000);
    await stack.ingress.kill!();
    expect(await held).toBe("no answer");
    await outage;

    await stack.ingress.start();
    const statuses: Array<number | string> = [];
    await until("a re-send answered 200", async () => {
      statuses.push(await resend(during.id));
      return statuses.at(-1) === 200;
    }, 30_000);
    await until("the answer to the message of the outage", async () => answers(during.id).length > 0, 30_000);
    expect(await resend(during.id)).toBe(200); // a later re-send of Meta's: known already
    await sleep(2000); // an answer drawn twice would show by now
    expect({ stored: await stored(during.id), answered: answers(during.id).length }).toEqual({ stored: 1, answered: 1 });
  }, 120_000);

  it("a post answered 503 whose store lands afterwards: Meta's re-send, to this process or after a kill -9, is answered 200 and changes nothing", async () => {
    const outage = stack.nats.restart!(ACK_WITHIN_MS + 1500);
    await sleep(200);
    const late = await whatsapp.say(ANA, { text: "ask late" });
    expect(late.status).toBe(503);
    await outage;
    // The handling went on after the 503 and stores the message once NATS is back.
    await until("the message of the 503 stored", async () => (await stored(late.id)) === 1, 30_000);
    expect(await resend(late.id)).toBe(200);
    await stack.ingress.kill!();
    await stack.ingress.start();
    expect(await resend(late.id)).toBe(200); // a new process: JetStream's duplicate window drops the copy
    await until("the answer to it", async () => answers(late.id).length > 0, 30_000);
    await sleep(2000);
    expect({ stored: await stored(late.id), answered: answers(late.id).length }).toEqual({ stored: 1, answered: 1 });
  }, 120_000);

  it("Meta's re-send after JetStream's duplicate window, to a new process: a second copy on the bus, still answered once and logged once", async () => {
    const first = await whatsapp.say(ANA, { text: "ask again" });
    expect(first.status).toBe(200);
    await until("the answer to it", async () => answers(first.id).length > 0, 30_000);
    await sleep(DUPLICATE_WINDOW_S * 1000 + 1000);
    await stack.ingress.kill!();
    await stack.ingress.start();
    expect(await resend(first.id)).toBe(200);
    await until("the copy on the bus", async () => (await stored(first.id)) === 2, 30_000);
    await sleep(3000); // a second answer would show by now
    const logged = readFileSync(join(stack.dataDir, "workspace/channels", ADAPTER, ANA.waId, "log.jsonl"), "utf8")
      .trim()
      .split("\n")
      .filter((l) => (JSON.parse(l) as { id: string }).id === first.id);
    expect({ answered: answers(first.id).length, logged: logged.length }).toEqual({ answered: 1, logged: 1 });
  }, 120_000);
});
