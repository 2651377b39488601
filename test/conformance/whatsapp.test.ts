import { afterAll, beforeAll, describe, it } from "@jest/globals";
import { describeConformance, eventually, type Person } from "@mom/ingress-sdk/testing";
import { parseApprovalButton } from "@mom/ingress-sdk";
import { type FakeWhatsApp, freePort, startFakeWhatsApp, type WaSent } from "@mom/testing";
import { deployedTarget } from "../support/deployed-target.js";
import { ingressProcess, momBin } from "../support/ingress-process.js";

// The ingress kit's standard suite against `mom ingress` of a whatsapp adapter, as a process, with
// the fake Cloud API posting signed webhooks to it. A WhatsApp chat belongs to one person: the
// "room" is the member's own chat with the business, and every message addresses mom. Not here:
// a dropped connection (the platform posts webhooks, there is none to drop) and messages sent
// while the ingress is down (the fake does not retry a webhook post that failed).
const people: Record<Person, { waId: string; name: string }> = {
  admin: { waId: "4917000000101", name: "Ana Lopez" },
  member: { waId: "4917000000102", name: "Bob" },
  stranger: { waId: "4917000000103", name: "Carol" },
};

let whatsapp: FakeWhatsApp;
let dataDir: string;
let port: number;
let last: string | undefined;

const proc = ingressProcess({ args: () => [momBin, "ingress", "wa", dataDir], env: () => ({ WA_TOKEN: whatsapp.accessToken, WA_SECRET: whatsapp.appSecret, NATS_URL: "" }), ready: "whatsapp ingress receiving" });

/** The approval prompt (reply buttons) of `approvalId` in `waId`'s chat. */
const promptIn = (waId: string, approvalId: string, argsSummary: string): WaSent | undefined =>
  whatsapp.sentTo(waId).find((m) => m.buttons?.some((b) => parseApprovalButton(b.id)?.approvalId === approvalId) && m.text?.includes(argsSummary));

describeConformance(
  "ingress conformance: whatsapp",
  deployedTarget({
    adapter: "wa",
    async setup(dir) {
      dataDir = dir;
      whatsapp = await startFakeWhatsApp();
      port = await freePort();
      whatsapp.webhookUrl = `http://127.0.0.1:${port}/webhook`;
      return {
        type: "whatsapp",
        accessToken: "env:WA_TOKEN",
        appSecret: "env:WA_SECRET",
        verifyToken: whatsapp.verifyToken,
        phoneNumberId: whatsapp.phoneNumberId,
        apiUrl: whatsapp.url,
        webhookPort: port,
        admins: [people.admin.waId],
        dm: [people.member.waId],
      };
    },
    teardown: async () => whatsapp?.close(),
    ingress: {
      ...proc,
      async start() {
        await proc.start();
        // The business may write only to people who wrote within 24 hours: the admin has, so the
        // copy of each approval prompt reaches the admin's chat.
        await whatsapp.say(people.admin, { text: "hello mom" });
      },
    },
    platform: {
      users: { admin: people.admin.waId, member: people.member.waId, stranger: people.stranger.waId },
      room: people.member.waId,
      everyMessageAddressed: true,
      dmWith: (who) => people[who].waId,
      async send(channel, who, text, o = {}) {
        if (channel !== people[who].waId) throw new Error(`on WhatsApp ${who} writes only in their own chat, not ${channel}`);
        const media = o.file && { kind: "document" as const, bytes: o.file.bytes, mimeType: "text/plain", filename: o.file.filename };
        const { id, status } = await whatsapp.say(people[who], { text, ...(media && { media }) });
        if (status !== 200) throw new Error(`the webhook answered ${status}`);
        last = id;
      },
      async redeliverLast() {
        const status = await whatsapp.redeliver(last!);
        if (status !== 200) throw new Error(`the webhook answered ${status} to the redelivery`);
      },
      async botTexts(channel) {
        return whatsapp.sentTo(channel).map((m) => m.text ?? m.document?.caption ?? m.document?.filename ?? "");
      },
      async botFiles(channel) {
        return whatsapp
          .sentTo(channel)
          .filter((m) => m.document)
          .map((m) => ({ filename: m.document!.filename ?? "", bytes: whatsapp.mediaBytes(m.document!.id)?.bytes ?? new Uint8Array() }));
      },
      async decide(channel, { approvalId, argsSummary }, decision, who) {
        // An approver taps the copy in their own chat. The stranger has no copy: they tap the one in
        // the asker's chat, which the ingress judges by who tapped, as it would any tap.
        const prompt = await eventually(
          () => promptIn(people[who].waId, approvalId, argsSummary) ?? (who === "stranger" ? promptIn(channel, approvalId, argsSummary) : undefined),
          `a prompt showing "${argsSummary}" with buttons for approval ${approvalId}, for ${who}`,
        );
        const { status } = await whatsapp.clickButton(people[who], prompt, decision === "deny" ? "Deny" : "Allow once");
        if (status !== 200) throw new Error(`the webhook answered ${status} to the tap`);
      },
      rateLimitNext(n) {
        whatsapp.rateLimit(n);
      },
    },
  }),
  { describe, it, beforeAll, afterAll },
);
