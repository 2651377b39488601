import { afterAll, beforeAll, describe, it } from "@jest/globals";
import { describeConformance, type Person } from "@mom/ingress-sdk/testing";
import { ngircdAvailable, startIrcServer, type TestIrcServer } from "@mom/testing";
import { join } from "node:path";
import { deployedTarget } from "../support/deployed-target.js";
import { ingressProcess } from "../support/ingress-process.js";
import { buildIrcExample } from "../support/irc-example.js";
import { IrcPerson } from "../support/irc-people.js";

// The ingress kit's standard suite against examples/ingress-irc, the ingress written outside this
// workspace: built from the SDK's tarball, run as its own process on a real IRC server (ngircd).
// The kit itself is the tarball's (`@mom/ingress-sdk/testing` as the example installed it), so
// this is the suite an outside author runs (examples/ingress-irc/README.md, "Test it").
const CHANNEL = "#mom";
const MOM = "mom";
const nicks: Record<Person, string> = { admin: "ana", member: "bob", stranger: "carol" };

const skip = ngircdAvailable() ? undefined : "ngircd is not installed (apt-get install -y ngircd)";
const exampleDir = skip ? "" : buildIrcExample();
const kit = skip ? undefined : ((await import(join(exampleDir, "node_modules/@mom/ingress-sdk/dist/testing/index.js"))) as typeof import("@mom/ingress-sdk/testing"));

let irc: TestIrcServer;
let dataDir: string;
let people: Record<Person, IrcPerson>;

/** mom's lines in a channel (as the member, who is in it, received them) or in a private conversation (as its person did). */
function momLines(channel: string): string[] {
  if (channel === CHANNEL) return people.member.from(MOM, CHANNEL).map((l) => l.message);
  const who = (Object.keys(nicks) as Person[]).find((p) => nicks[p] === channel);
  if (!who) throw new Error(`no private conversation "${channel}" in this suite`);
  return people[who].from(MOM, nicks[who]).map((l) => l.message);
}

const ingress = ingressProcess({
  args: () => [join(exampleDir, "dist/main.js"), "--adapter", "irc", "--data-dir", dataDir],
  // Not Jest's NODE_OPTIONS: the example runs as it would on its own.
  env: () => ({ NODE_OPTIONS: "", NATS_URL: "" }),
  ready: "irc ingress receiving",
});

// Without ngircd the cases are listed as skipped, with the reason in the suite's name.
(kit?.describeConformance ?? describeConformance)(
    `ingress conformance: irc (examples/ingress-irc, the kit from the SDK tarball)${skip ? ` - skipped: ${skip}` : ""}`,
    deployedTarget({
      adapter: "irc",
      config: { log: { level: "info" } },
      async setup(dir) {
        dataDir = dir;
        irc = await startIrcServer();
        people = { admin: new IrcPerson(irc, nicks.admin, CHANNEL), member: new IrcPerson(irc, nicks.member, CHANNEL), stranger: new IrcPerson(irc, nicks.stranger, CHANNEL) };
        await Promise.all(Object.values(people).map((p) => p.connect()));
        const settings = { host: irc.host, port: irc.port, tls: false, nick: MOM, channels: [CHANNEL] };
        return { type: "external", platform: "irc", settings, admins: [nicks.admin], dm: [nicks.member] };
      },
      async teardown() {
        if (process.env.DEBUG_CONFORMANCE) process.stderr.write(`INGRESS OUTPUT\n${ingress.output()}\nNGIRCD\n${irc?.log()}\n`);
        await Promise.all(Object.values(people ?? {}).map((p) => p.quit()));
        await irc?.stop();
      },
      ingress,
      platform: {
        // The ingress's default identity is the nick, lower-cased.
        users: nicks,
        room: CHANNEL,
        dmWith: (who) => nicks[who],
        async send(channel, who, text, o = {}) {
          if (o.file) throw new Error("IRC cannot carry files");
          if (channel === CHANNEL) people[who].say(CHANNEL, o.mention ? `${MOM}: ${text}` : text);
          else if (channel === nicks[who]) people[who].say(MOM, text);
          else throw new Error(`${who} cannot write in ${channel}`);
        },
        async botTexts(channel) {
          return momLines(channel);
        },
        async decide(channel, { argsSummary }, decision, who) {
          // The prompt is several lines: the call's, then "To answer, say: !approve <code> …".
          const code = await kit!.eventually(() => {
            const lines = momLines(channel);
            const at = lines.findIndex((l) => l.includes(argsSummary));
            return at >= 0 && lines.slice(at).map((l) => /!approve ([0-9a-f]{8})\b/.exec(l)?.[1]).find(Boolean);
          }, `the approval prompt showing "${argsSummary}" and its code`);
          people[who].say(channel === CHANNEL ? CHANNEL : MOM, `${decision === "deny" ? "!deny" : "!approve"} ${code}`);
        },
        async dropConnection() {
          // Every connection is cut, the people's too; they come back once mom is back in the channel.
          await irc.restart(1000);
          await Promise.all(Object.values(people).map((p) => p.connect()));
          await kit!.eventually(() => people.member.sees(MOM), "mom back in the channel", 50_000);
        },
      },
    }),
    { describe: skip ? describe.skip : describe, it, beforeAll, afterAll },
  );
