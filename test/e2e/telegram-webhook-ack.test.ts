import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type FakeTelegram, freePort, startFakeTelegram, type TgChat, type TgMessage, type TgUser } from "@mom/testing";
import { type IngressProcessStack, startIngressProcessStack } from "../support/ingress-process-stack.js";
import { sleep, until } from "../support/wait.js";

// Telegram forgets an update its webhook post was answered 2xx for, and re-sends one that was not
// (holding the chat's later updates meanwhile). So in webhook mode the Telegram ingress (`mom
// ingress tg`, its own process) answers a post only once its message is stored on the bus. With
// NATS down (nothing can be stored) a post is answered 500 after WEBHOOK_ACK_WITHIN_MS, never 200;
// Telegram's re-send, held while the first store still retries, dies with the ingress (kill -9);
// once NATS and the ingress are back, the next re-send is answered 200 and the message is on the
// bus once and answered once. A post answered 500 whose store lands afterwards is not stored or
// answered twice when Telegram re-sends it (msg-id dedupe).

const ADAPTER = "tg";
const ANA: TgUser = { id: 3001, is_bot: false, first_name: "Ana", username: "ana" };
const DM: TgChat = { id: ANA.id, type: "private", first_name: "Ana" };
/** The SDK's WEBHOOK_ACK_WITHIN_MS. */
const ACK_WITHIN_MS = 5000;
/** Long enough for a post to be answered 500, its re-send held, and the ingress killed meanwhile. */
const NATS_DOWN_MS = ACK_WITHIN_MS + 4000;

describe("Telegram ingress, webhook mode: a post is answered 200 only once its message is stored", () => {
  let telegram: FakeTelegram;
  let stack: IngressProcessStack;

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    const port = await freePort();
    const settings = { type: "telegram", botToken: "env:TG_TOKEN", apiUrl: telegram.url, webhookUrl: `http://127.0.0.1:${port}/hook`, webhookSecret: "hook-secret", webhookPort: port };
    stack = await startIngressProcessStack({ adapter: ADAPTER, settings, env: { TG_TOKEN: telegram.token }, ready: "telegram ingress receiving" });
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    await telegram?.close();
  });

  /** A person writes; Telegram posts the update to the webhook. Resolves with it and the post's status. */
  const say = async (text: string): Promise<{ update: { update_id: number; message: TgMessage }; status: number }> => {
    const message = telegram.say({ chat: DM, from: ANA, text });
    const update = { update_id: telegram.lastUpdateId, message };
    const post = await until(`the webhook's answer to update ${update.update_id}`, async () => telegram.webhookPosts.find((p) => p.updateId === update.update_id), 30_000);
    return { update, status: post.status };
  };
  /** Telegram's re-send: the webhook's status, 0 when the connection died. */
  const resend = (update: { update_id: number }) => telegram.postUpdate(update);
  const answers = (m: TgMessage) => telegram.botMessages(DM.id).filter((b) => b.reply_to_message?.message_id === m.message_id && b.text?.startsWith("answer "));
  const stored = (m: TgMessage) => stack.stored(String(DM.id), String(m.message_id));

  it("NATS down: 500, not 200; the ingress killed while Telegram's re-send waits; back up: the re-send is answered 200, stored once, answered once", async () => {
    const hello = await say("ask hello");
    expect(hello.status).toBe(200);
    await until("the answer to hello", async () => answers(hello.update.message).length === 1, 30_000);

    const outage = stack.nats.restart!(NATS_DOWN_MS);
    await sleep(200);
    const t0 = Date.now();
    const during = await say("ask during");
    expect({ status: during.status, afterMs: Date.now() - t0 >= ACK_WITHIN_MS - 200 }).toEqual({ status: 500, afterMs: true });
    // Telegram posts it again: its first store still retries, so this post waits for it too, and
    // the ingress dies meanwhile.
    const held = resend(during.update);
    await sleep(1000);
    await stack.ingress.kill!();
    expect(await held).toBe(0);
    await outage;

    await stack.ingress.start();
    await until("a re-send answered 200", async () => (await resend(during.update)) === 200, 30_000);
    await until("the answer to the message of the outage", async () => answers(during.update.message).length > 0, 30_000);
    expect(await resend(during.update)).toBe(200); // another re-send: known already
    await sleep(2000); // an answer drawn twice would show by now
    expect({ stored: await stored(during.update.message), answered: answers(during.update.message).length }).toEqual({ stored: 1, answered: 1 });
  }, 120_000);

  it("a post answered 500 whose store lands afterwards: Telegram's re-send, to this process or after a kill -9, is answered 200 and changes nothing", async () => {
    const outage = stack.nats.restart!(ACK_WITHIN_MS + 1500);
    await sleep(200);
    const late = await say("ask late");
    expect(late.status).toBe(500);
    await outage;
    // The handling went on after the 500 and stores the message once NATS is back.
    await until("the message of the 500 stored", async () => (await stored(late.update.message)) === 1, 30_000);
    expect(await resend(late.update)).toBe(200);
    await stack.ingress.kill!();
    await stack.ingress.start();
    expect(await resend(late.update)).toBe(200); // a new process: JetStream's duplicate window drops the copy
    await until("the answer to it", async () => answers(late.update.message).length > 0, 30_000);
    await sleep(2000);
    expect({ stored: await stored(late.update.message), answered: answers(late.update.message).length }).toEqual({ stored: 1, answered: 1 });
  }, 120_000);
});
