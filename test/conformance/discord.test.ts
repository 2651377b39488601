import { afterAll, beforeAll, describe, it } from "@jest/globals";
import { describeConformance, eventually, type Person } from "@mom/ingress-sdk/testing";
import { type FakeDiscord, type FakeDiscordMessage, type FakeDiscordUser, startFakeDiscord } from "@mom/testing";
import { deployedTarget } from "../support/deployed-target.js";
import { ingressProcess, momBin } from "../support/ingress-process.js";

// The ingress kit's standard suite against `mom ingress` of a discord adapter, as a process, over
// the fake Discord (REST and gateway). Not here: messages sent while the ingress is down — a new
// process identifies a new gateway session, and Discord replays missed events only to a session
// that resumes.
let discord: FakeDiscord;
let dataDir: string;
let people: Record<Person, FakeDiscordUser>;
let room: string;
const dms = new Map<Person, string>();
let last: FakeDiscordMessage | undefined;

/** mom's messages in `channel` and in the threads it started on them (tool details), oldest first. */
const botMessages = (channel: string): FakeDiscordMessage[] =>
  discord.botMessages(channel).flatMap((m) => [m, ...(discord.channel(m.id) ? discord.botMessages(m.id) : [])]);

describeConformance(
  "ingress conformance: discord",
  deployedTarget({
    adapter: "dc",
    async setup(dir) {
      dataDir = dir;
      discord = await startFakeDiscord({ heartbeatIntervalMs: 1000 });
      people = { admin: discord.addUser("ana", { globalName: "Ana Lopez" }), member: discord.addUser("bob"), stranger: discord.addUser("carol") };
      room = discord.addTextChannel("team").id;
      for (const who of ["admin", "member", "stranger"] as const) dms.set(who, discord.dmChannel(people[who]).id);
      return { type: "discord", botToken: "env:DC_TOKEN", apiUrl: discord.apiUrl, admins: [people.admin.id], dm: [people.member.id] };
    },
    teardown: async () => discord?.close(),
    ingress: ingressProcess({ args: () => [momBin, "ingress", "dc", dataDir], env: () => ({ DC_TOKEN: discord.token, NATS_URL: "" }), ready: "discord ingress receiving" }),
    platform: {
      get users() {
        return { admin: people.admin.id, member: people.member.id, stranger: people.stranger.id };
      },
      get room() {
        return room;
      },
      dmWith: (who) => dms.get(who)!,
      async send(channel, who, text, o = {}) {
        const content = o.mention && channel === room ? `<@${discord.bot.id}> ${text}` : text;
        last = discord.say({ channelId: channel, author: people[who], content, ...(o.file && { attachments: [{ filename: o.file.filename, bytes: o.file.bytes, contentType: "text/plain" }] }) });
      },
      async redeliverLast() {
        discord.redeliver(last!.id);
      },
      async botTexts(channel) {
        return botMessages(channel).map((m) => m.content);
      },
      async botFiles(channel) {
        return botMessages(channel).flatMap((m) => m.attachments.map((a) => ({ filename: a.filename, bytes: new Uint8Array(a.bytes) })));
      },
      async decide(channel, { approvalId, argsSummary }, decision, who) {
        const customId = `mom-approval:${decision === "deny" ? "deny" : "allow"}:${approvalId}`;
        const hasButton = (m: FakeDiscordMessage) => (m.components as Array<{ components?: Array<{ custom_id?: string }> }>).some((row) => row.components?.some((b) => b.custom_id === customId));
        const prompt = await eventually(() => botMessages(channel).find((m) => hasButton(m) && m.content.includes(argsSummary)), `a prompt showing "${argsSummary}" with ${customId}`);
        discord.click(prompt.id, customId, people[who]);
      },
      rateLimitNext(n) {
        discord.rateLimit({ path: /^\/channels\/\d+\/messages/, count: n, retryAfterSeconds: 0.5 });
      },
      async dropConnection() {
        discord.dropConnections();
      },
    },
  }),
  { describe, it, beforeAll, afterAll },
);
