import { afterAll, beforeAll, describe, it } from "@jest/globals";
import { describeConformance, eventually, type Person } from "@mom/ingress-sdk/testing";
import { type FakeTelegram, startFakeTelegram, type TgMessage, type TgUser } from "@mom/testing";
import { deployedTarget } from "../support/deployed-target.js";
import { ingressProcess, momBin } from "../support/ingress-process.js";

// The ingress kit's standard suite against `mom ingress` of a telegram adapter, as a process,
// over the fake Bot API.
const people: Record<Person, TgUser> = {
  admin: { id: 1001, is_bot: false, first_name: "Ana", username: "ana" },
  member: { id: 1002, is_bot: false, first_name: "Bob", username: "bob" },
  stranger: { id: 1003, is_bot: false, first_name: "Carol", username: "carol" },
};
const team = { id: -100200, type: "supergroup" as const, title: "team" };

let telegram: FakeTelegram;
let dataDir: string;
let last: TgMessage | undefined;

const chatOf = (channel: string, who: Person) => (channel === String(team.id) ? team : { id: people[who].id, type: "private" as const, first_name: people[who].first_name });

describeConformance(
  "ingress conformance: telegram",
  deployedTarget({
    adapter: "tg",
    async setup(dir) {
      dataDir = dir;
      telegram = await startFakeTelegram();
      return { type: "telegram", botToken: "env:TG_TOKEN", apiUrl: telegram.url, admins: [String(people.admin.id)], dm: [String(people.member.id)] };
    },
    teardown: async () => telegram?.close(),
    ingress: ingressProcess({ args: () => [momBin, "ingress", "tg", dataDir], env: () => ({ TG_TOKEN: telegram.token, NATS_URL: "" }), ready: "telegram ingress receiving", buffersWhileDown: true }),
    platform: {
      users: { admin: String(people.admin.id), member: String(people.member.id), stranger: String(people.stranger.id) },
      room: String(team.id),
      checksMembership: true,
      dmWith: (who) => String(people[who].id),
      async send(channel, who, text, o = {}) {
        const body = o.mention && channel === String(team.id) ? telegram.mention(text) : { text };
        last = telegram.say({ chat: chatOf(channel, who), from: people[who], ...body, ...(o.file && { document: { name: o.file.filename, bytes: o.file.bytes, mimeType: "text/plain" } }) });
      },
      async redeliverLast() {
        telegram.redeliver(last!);
      },
      async botTexts(channel) {
        return telegram.botMessages(Number(channel)).map((m) => m.text ?? m.caption ?? "");
      },
      async botFiles(channel) {
        return telegram
          .botMessages(Number(channel))
          .filter((m) => m.document)
          .map((m) => ({ filename: m.document!.file_name ?? "", bytes: telegram.fileBytes(m.document!.file_id) ?? new Uint8Array() }));
      },
      async decide(channel, { approvalId, argsSummary }, decision, who) {
        const want = decision === "deny" ? "Deny" : "Allow once";
        const [m, button] = await eventually(() => {
          for (const m of telegram.botMessages(Number(channel))) {
            const b = m.reply_markup?.inline_keyboard.flat().find((b) => b.text === want && b.callback_data?.includes(approvalId));
            if (b && m.text?.includes(argsSummary)) return [m, b] as const;
          }
          return undefined;
        }, `a prompt showing "${argsSummary}" with ${want} for approval ${approvalId}`);
        await telegram.click(Number(channel), m.message_id, button.callback_data!, people[who]);
      },
      rateLimitNext(n) {
        telegram.rateLimit("sendMessage", n, 1);
        telegram.rateLimit("editMessageText", n, 1);
      },
      async dropConnection() {
        telegram.fail("getUpdates", 2);
        // Cut once the ingress met the failures: a message sent before that could slip through the
        // long poll already held open, and the case would prove nothing (and the next case would
        // meet the outage instead).
        await eventually(() => telegram.failuresLeft("getUpdates") === 0, "the ingress's getUpdates answered 502 twice", 60_000);
      },
    },
  }),
  { describe, it, beforeAll, afterAll },
);
