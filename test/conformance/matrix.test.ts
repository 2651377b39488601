import { afterAll, beforeAll, describe, it } from "@jest/globals";
import { describeConformance, eventually, type Person } from "@mom/ingress-sdk/testing";
import { type FakeMatrix, type MxEvent, type MxUser, startFakeMatrix } from "@mom/testing";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { deployedTarget } from "../support/deployed-target.js";
import { ingressProcess } from "../support/ingress-process.js";

// The ingress kit's standard suite against the Matrix ingress as deployed: an external adapter,
// its own process (services/ingress-matrix/dist/main.js) over the fake homeserver, with a sync
// store so what is said while it is down is handled after a restart.
const MAIN = join(dirname(fileURLToPath(import.meta.url)), "../../services/ingress-matrix/dist/main.js");

let matrix: FakeMatrix;
let dataDir: string;
let people: Record<Person, MxUser>;
let room: string;
const dms = new Map<Person, string>();
let last: MxEvent | undefined;

describeConformance(
  "ingress conformance: matrix",
  deployedTarget({
    adapter: "mx",
    async setup(dir) {
      dataDir = dir;
      matrix = await startFakeMatrix();
      people = { admin: matrix.user("ana", "Ana"), member: matrix.user("bob", "Bob"), stranger: matrix.user("carol", "Carol") };
      room = matrix.createRoom({ members: Object.values(people), name: "team" });
      for (const who of ["member", "stranger"] as const) dms.set(who, matrix.createRoom({ members: [people[who]], direct: true }));
      const settings = { homeserverUrl: matrix.url, accessToken: "env:MX_TOKEN", store: join(dataDir, "mx-sync.json"), editIntervalMs: 200 };
      return { type: "external", platform: "matrix", settings, admins: [people.admin.userId], dm: [people.member.userId] };
    },
    teardown: async () => matrix?.close(),
    ingress: ingressProcess({ args: () => [MAIN, "--adapter", "mx", "--data-dir", dataDir], env: () => ({ MX_TOKEN: matrix.accessToken, NATS_URL: "" }), ready: "matrix ingress receiving", buffersWhileDown: true }),
    platform: {
      get users() {
        return { admin: people.admin.userId, member: people.member.userId, stranger: people.stranger.userId };
      },
      get room() {
        return room;
      },
      dmWith: (who) => dms.get(who)!,
      async send(channel, who, text, o = {}) {
        const body = o.mention ? matrix.mention(text) : { text };
        last = matrix.say(channel, people[who], o.file ? { text: body.text, file: { name: o.file.filename, bytes: o.file.bytes, mimeType: "text/plain" } } : body);
      },
      async redeliverLast() {
        matrix.redeliver(last!.event_id);
      },
      async botTexts(channel) {
        return matrix.botMessages(channel).map((m) => m.body);
      },
      async botFiles(channel) {
        return matrix
          .botMessages(channel)
          .filter((m) => m.msgtype === "m.file")
          .map((m) => ({ filename: String(m.content.filename ?? m.body), bytes: matrix.mediaBytes(String(m.content.url)) ?? new Uint8Array() }));
      },
      async decide(channel, { argsSummary }, decision, who) {
        const prompt = await eventually(() => matrix.botMessages(channel).find((m) => m.body.includes(argsSummary)), `the prompt showing "${argsSummary}"`);
        matrix.react(channel, people[who], prompt.eventId, decision === "deny" ? "❌" : "✅");
      },
      rateLimitNext(n) {
        matrix.rateLimit("send", n, 500);
      },
      async dropConnection() {
        matrix.fail("sync", 1);
      },
    },
  }),
  { describe, it, beforeAll, afterAll },
);
