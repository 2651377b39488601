import { afterAll, beforeAll, describe, it } from "@jest/globals";
import { describeConformance, eventually, type Person } from "@mom/ingress-sdk/testing";
import { type MailServers, mailServersUnavailable, startMailServers } from "@mom/testing";
import { createHash, randomUUID } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { deployedTarget } from "../support/deployed-target.js";
import { ingressProcess } from "../support/ingress-process.js";

// The ingress kit's standard suite against the e-mail ingress as deployed (an external adapter,
// its own process) over real dovecot and postfix. A channel is a mail thread: the driver starts
// each of its channels with a root mail of a known Message-ID and replies in it afterwards.
const MAIN = join(dirname(fileURLToPath(import.meta.url)), "../../services/ingress-email/dist/main.js");
const MOM = "mom@mom.test";
const people: Record<Person, string> = { admin: "ana@example.test", member: "bob@example.test", stranger: "dan@example.test" };
const PASSWORD = "mom-conformance-secret";

/** The channel of a thread rooted at `rootId`, as the ingress names it (sha256 of the root's <Message-ID>). */
const channelOf = (rootId: string) => createHash("sha256").update(rootId).digest("hex").slice(0, 24);
const roots = new Map<string, string>();
const thread = (name: string) => {
  const root = `<${name}-${randomUUID()}@example.test>`;
  roots.set(channelOf(root), root);
  return channelOf(root);
};

let mail: MailServers;
let dataDir: string;
let last: Parameters<MailServers["send"]>[0] | undefined;
const started = new Set<string>();
const room = thread("room");
const dms: Partial<Record<Person, string>> = { member: thread("dm-member"), stranger: thread("dm-stranger") };

/** A header's value in a stored message (the first of that name). */
const headerOf = (source: Buffer, name: string) => new RegExp(`^${name}:\\s*(.+)$`, "im").exec(source.toString("latin1").split(/\r?\n\r?\n/)[0]!)?.[1]?.trim();

/** mom's mails in the thread of `channel`, as the people of the suite received them, once each. */
async function momMails(channel: string) {
  const root = roots.get(channel)!;
  const seen = new Map<string, Awaited<ReturnType<MailServers["messages"]>>[number]>();
  for (const who of Object.values(people)) {
    for (const m of await mail.messages(who)) {
      const refs = [m.references ?? []].flat();
      if (m.from?.value[0]?.address === MOM && (refs.includes(root) || m.inReplyTo === root) && m.messageId) seen.set(m.messageId, m);
    }
  }
  return [...seen.values()];
}

const ingress = ingressProcess({ args: () => [MAIN, "--adapter", "mail", "--data-dir", dataDir], env: () => ({ MAIL_PASSWORD: PASSWORD, NATS_URL: "" }), ready: "email ingress receiving", buffersWhileDown: true });
const skip = mailServersUnavailable();
// Without the mail servers the cases are listed as skipped, with the reason in the suite's name.
describeConformance(
    `ingress conformance: email${skip ? ` - skipped: ${skip}` : ""}`,
    deployedTarget({
      adapter: "mail",
      async setup(dir) {
        dataDir = dir;
        mail = await startMailServers({ users: Object.fromEntries([MOM, ...Object.values(people)].map((a) => [a, a === MOM ? PASSWORD : "pw"])) });
        const settings = { address: MOM, password: "env:MAIL_PASSWORD", imapHost: mail.host, imapPort: mail.imapPort, imapTls: false, smtpHost: mail.host, smtpPort: mail.smtpPort, allowFrom: ["@example.test"] };
        return { type: "external", platform: "email", settings, admins: [people.admin], dm: [people.member] };
      },
      async teardown() {
        if (process.env.DEBUG_CONFORMANCE) process.stderr.write(`INGRESS OUTPUT\n${ingress.output()}\n`);
        await mail?.stop();
      },
      ingress,
      platform: {
        users: people,
        room,
        everyMessageAddressed: true,
        dmWith: (who) => dms[who]!,
        async send(channel, who, text, o = {}) {
          const root = roots.get(channel)!;
          const first = !started.has(channel);
          started.add(channel);
          last = {
            from: people[who],
            to: MOM,
            subject: "conformance",
            text,
            messageId: first ? root : `<${randomUUID()}@example.test>`,
            ...(!first && { inReplyTo: root, references: [root] }),
            ...(o.file && { attachments: [{ filename: o.file.filename, content: Buffer.from(o.file.bytes), contentType: "text/plain" }] }),
          };
          await mail.send(last);
          // Mail is not ordered on its way (postfix defers a delivery now and then and tries again a
          // second later); people write one after another, each delivered before the next.
          const id = last.messageId as string;
          await eventually(() => mail.mailbox(MOM).some((m) => headerOf(m.source, "message-id") === id), `the mail ${id} delivered to mom's mailbox`);
        },
        async redeliverLast() {
          const before = mail.mailbox(MOM).length;
          await mail.send(last!);
          await eventually(() => mail.mailbox(MOM).length > before, "the copy delivered");
        },
        async botTexts(channel) {
          return (await momMails(channel)).map((m) => m.text ?? "");
        },
        async botFiles(channel) {
          return (await momMails(channel)).flatMap((m) => m.attachments.map((a) => ({ filename: a.filename ?? "", bytes: new Uint8Array(a.content) })));
        },
        async decide(channel, { argsSummary }, decision, who) {
          const prompt = await eventually(async () => (await momMails(channel)).find((m) => m.text?.includes(argsSummary)), `the approval mail showing "${argsSummary}"`);
          const code = /"approve (\d{8})"/.exec(prompt.text ?? "")?.[1];
          if (!code) throw new Error(`no code in the approval mail:\n${prompt.text}`);
          const root = roots.get(channel)!;
          await mail.send({ from: people[who], to: MOM, subject: `Re: ${prompt.subject}`, text: `${decision === "deny" ? "deny" : "approve"} ${code}\n`, inReplyTo: prompt.messageId, references: [root, prompt.messageId!] });
        },
        async dropConnection() {
          await mail.stopImap();
          await mail.startImap();
        },
      },
    }),
    { describe: skip ? describe.skip : describe, it, beforeAll, afterAll },
  );
