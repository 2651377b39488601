import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { plainDialect } from "@mom/render";
import { spawnNatsServer, type TestNats } from "@mom/testing";
import { pino } from "pino";
import { Type } from "typebox";
import type { IngressDefinition, InboundPort } from "./platform.js";
import { type RunningIngress, startIngress } from "./start-ingress.js";
import { ScriptedMom } from "./testing/scripted-mom.js";

// A chat's messages reach mom in order, so a file that will not download holds the ones after it:
// the shell gives up on it after attachments.downloadSeconds, and it reaches mom as not available.

const ADAPTER = "stall";

describe("a file whose download stalls", () => {
  let nats: TestNats;
  let mom: ScriptedMom;
  let ingress: RunningIngress;
  let inbound!: InboundPort;
  const aborted: boolean[] = [];

  beforeAll(async () => {
    nats = await spawnNatsServer();
    mom = await ScriptedMom.connect({ natsUrl: nats.url, namespace: nats.namespace, adapter: ADAPTER });
    const definition: IngressDefinition = {
      platform: "stall",
      settings: Type.Object({}),
      connect: (ctx) => {
        inbound = ctx.inbound;
        return { surface: { dialect: plainDialect(), drawEvent: async () => undefined }, start: async () => {}, stop: async () => {} };
      },
    };
    ingress = await startIngress(definition, {
      adapter: { adapter: ADAPTER, access: {}, maxAttachmentBytes: 1 << 20, attachmentDownloadMs: 1000, settings: {} },
      bus: { url: nats.url, name: `ingress-${ADAPTER}`, namespace: nats.namespace, logger: pino({ level: "silent" }) },
      logger: pino({ level: "silent" }),
    });
  });
  afterAll(async () => {
    await ingress?.close();
    await mom?.close();
    await nats?.stop();
  });

  it("is given up on after attachments.downloadSeconds: it and the chat's next message reach mom, in order", async () => {
    const sent = (id: string, text: string) => ({ id, channelId: "room", timestamp: new Date().toISOString(), sender: { id: "u-ana", username: "ana", isBot: false }, text, isMention: true });
    const stalled = (_max: number, signal?: AbortSignal) =>
      new Promise<never>((_resolve, reject) => signal?.addEventListener("abort", () => (aborted.push(true), reject(new Error("aborted")))));
    const first = inbound.receive({ ...sent("m1", "see the file"), files: [{ filename: "big.iso", size: 100, download: stalled }] });
    const second = inbound.receive(sent("m2", "and then this"));
    await Promise.all([first, second]);
    const got = await mom.messages("room");
    expect(got.map((m) => m.id)).toEqual(["m1", "m2"]);
    expect(got[0]!.attachments).toEqual([expect.objectContaining({ filename: "big.iso", note: "not downloaded: it took longer than 1 s (attachments.downloadSeconds)" })]);
    expect(aborted).toEqual([true]);
  }, 30_000);
});
