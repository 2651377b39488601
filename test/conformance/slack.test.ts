import { afterAll, beforeAll, describe, it } from "@jest/globals";
import { describeConformance, eventually, type Person } from "@mom/ingress-sdk/testing";
import { type FakeSlack, type FakeSlackEnvelope, type FakeSlackMessage, startFakeSlack } from "@mom/testing";
import { deployedTarget } from "../support/deployed-target.js";
import { ingressProcess, momBin } from "../support/ingress-process.js";

// The ingress kit's standard suite against `mom ingress` of a slack adapter, as a process, over the
// fake Slack (Web API and Socket Mode). What is said while the ingress is down waits: the fake
// queues envelopes until a socket connects, and the ingress backfills from the channel's history.
const people: Record<Person, string> = { admin: "U0ANA", member: "U0BOB", stranger: "U0CAROL" };
const ROOM = "C0TEAM";
const dms: Record<Person, string> = { admin: "D0ANA", member: "D0BOB", stranger: "D0CAROL" };

let slack: FakeSlack;
let dataDir: string;
let last: FakeSlackEnvelope[] = [];

/** mom's messages in `channel`, each followed by mom's replies in its thread (where the layout puts details, files and prompts). */
const botMessages = (channel: string): FakeSlackMessage[] =>
  slack
    .messages(channel)
    .flatMap((m) => [m, ...slack.messages(channel, { thread: m.ts })])
    .filter((m) => m.user === slack.botUserId);

const sectionsOf = (m: FakeSlackMessage) => (m.blocks ?? []).map((b) => String(b.text?.text ?? "")).join("\n");

describeConformance(
  "ingress conformance: slack",
  deployedTarget({
    adapter: "sl",
    async setup(dir) {
      dataDir = dir;
      slack = await startFakeSlack({
        users: [
          { id: people.admin, name: "ana", real_name: "Ana Lopez" },
          { id: people.member, name: "bob" },
          { id: people.stranger, name: "carol" },
        ],
        channels: [{ id: ROOM, name: "team" }, ...(["admin", "member", "stranger"] as const).map((who) => ({ id: dms[who], is_im: true, user: people[who] }))],
      });
      return { type: "slack", botToken: "env:SL_BOT", appToken: "env:SL_APP", apiUrl: slack.apiUrl, admins: [people.admin], dm: [people.member] };
    },
    teardown: async () => slack?.close(),
    ingress: ingressProcess({ args: () => [momBin, "ingress", "sl", dataDir], env: () => ({ SL_BOT: slack.botToken, SL_APP: slack.appToken, NATS_URL: "" }), ready: "slack ingress receiving", buffersWhileDown: true }),
    platform: {
      users: people,
      room: ROOM,
      checksMembership: true,
      dmWith: (who) => dms[who],
      async send(channel, who, text, o = {}) {
        const files = o.file && [slack.addFile({ name: o.file.filename, bytes: o.file.bytes, mimetype: "text/plain" })];
        last = slack.userMessage({ channel, user: people[who], text: o.mention && channel === ROOM ? `<@${slack.botUserId}> ${text}` : text, ...(files && { files }) }).envelopes;
      },
      async redeliverLast() {
        for (const env of last) await slack.waitForAck(slack.redeliver(env).envelope_id);
      },
      async botTexts(channel) {
        return botMessages(channel).map((m) => m.text);
      },
      async botFiles(channel) {
        return slack.uploads.filter((u) => u.channel === channel).map((u) => ({ filename: u.filename, bytes: new Uint8Array(u.bytes) }));
      },
      async decide(channel, { approvalId, argsSummary }, decision, who) {
        const actionId = decision === "deny" ? "mom_approval_deny" : "mom_approval_allow";
        const hasButton = (m: FakeSlackMessage) => (m.blocks ?? []).some((b) => (b.elements as Array<{ action_id?: string; value?: string }> | undefined)?.some((e) => e.action_id === actionId && e.value === approvalId));
        const prompt = await eventually(() => botMessages(channel).find((m) => hasButton(m) && sectionsOf(m).includes(argsSummary)), `a prompt showing "${argsSummary}" with ${actionId} for ${approvalId}`);
        slack.clickButton({ channel, ts: prompt.ts, user: people[who], actionId });
      },
      rateLimitNext(n) {
        slack.rateLimit("chat.postMessage", n, 1);
        slack.rateLimit("chat.update", n, 1);
      },
      async dropConnection() {
        slack.dropSockets();
      },
    },
  }),
  { describe, it, beforeAll, afterAll },
);
