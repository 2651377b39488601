import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import nodemailer from "nodemailer";
import { mailServersUnavailable, type MailServers, startMailServers } from "./mail-servers.js";

const why = mailServersUnavailable();
if (why) process.stderr.write(`mail-servers.test.ts skipped: ${why}\n`);

(why ? describe.skip : describe)("the test mail servers (dovecot + postfix in a temp dir)", () => {
  let mail: MailServers;
  beforeAll(async () => {
    mail = await startMailServers({ users: { "mom@mom.test": "secret", "ana@example.test": "pw" }, bouncingDomains: ["gone.test"] });
  });
  afterAll(async () => {
    await mail?.stop();
  });

  const waitFor = async <T>(f: () => T | undefined, what: string): Promise<T> => {
    for (let i = 0; i < 200; i++) {
      const v = f();
      if (v) return v;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  it("postfix delivers mail for a test address into dovecot's Maildir, over LMTP", async () => {
    const id = await mail.send({ from: "ana@example.test", to: "mom@mom.test", subject: "hello", text: "hi mom" });
    const [got] = await waitFor(() => (mail.mailbox("mom@mom.test").length ? mail.mailbox("mom@mom.test") : undefined), "the delivery");
    expect(got!.source.toString()).toContain(`Message-ID: ${id}`);
    expect(got!.source.toString()).toMatch(/Delivered-To: mom@mom\.test/);
    expect(got!.seen).toBe(false);
    // Dovecot has the mail before postfix logs that it was taken.
    await waitFor(() => /status=sent \(250 2\.0\.0 <mom@mom\.test>/.test(mail.mailLog()), "postfix's log of the delivery");
  });

  it("a message to a bouncing domain comes back to its sender as a delivery report", async () => {
    await mail.send({ from: "ana@example.test", to: "ghost@gone.test", subject: "to nobody", text: "anyone?" });
    const bounce = await waitFor(() => mail.mailbox("ana@example.test").find((m) => m.source.toString().includes("multipart/report")), "the bounce");
    expect(bounce.source.toString()).toMatch(/^Return-Path: <>/m);
    expect(bounce.source.toString()).toMatch(/From: Mail Delivery System <MAILER-DAEMON@mx\.mom\.test>/);
  });

  it("an unknown mailbox is refused at RCPT; a sender may log in with its dovecot password (SASL)", async () => {
    await expect(mail.send({ from: "ana@example.test", to: "nobody@example.test", text: "x" })).rejects.toThrow(/550 5\.1\.1/);
    const login = (pass: string) => nodemailer.createTransport({ host: mail.host, port: mail.smtpPort, ignoreTLS: true, auth: { user: "mom@mom.test", pass } });
    await expect(login("wrong").verify()).rejects.toThrow(/535/);
    await login("secret").sendMail({ from: "mom@mom.test", to: "ana@example.test", text: "logged in" });
    await waitFor(() => /sasl_method=PLAIN, sasl_username=mom@mom\.test/.test(mail.mailLog()), "postfix's log of the login");
  });
});
