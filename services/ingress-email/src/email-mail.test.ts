import { describe, expect, it } from "@jest/globals";
import { simpleParser } from "mailparser";
import { ApprovalCodes } from "@mom/ingress-sdk";
import { autoReplyReason, bounceOf, mailInfo, momMessageId, promptOf, replySubject, threadChannel } from "./email-mail.js";
import { senderAllowed } from "./email-settings.js";

const mail = (headers: string, body = "hi") => simpleParser(`${headers.trim().replace(/\n/g, "\r\n")}\r\n\r\n${body}\r\n`, { keepDeliveryStatus: true });

describe("e-mail threads", () => {
  it("a thread is one channel: the root Message-ID names it, whatever the reply keeps", async () => {
    const root = await mail("Message-ID: <root@example.org>\nSubject: plan");
    const channel = threadChannel(root, "root@example.org");
    expect(channel).toMatch(/^[0-9a-f]{24}$/);
    const reply = await mail("Message-ID: <r2@example.org>\nIn-Reply-To: <x@y>\nReferences: <root@example.org> <x@y>");
    expect(threadChannel(reply, "r2@example.org")).toBe(channel);
    // A client that keeps only In-Reply-To, answering one of mom's mails: the id names the channel.
    const toMom = await mail(`Message-ID: <r3@example.org>\nIn-Reply-To: <${momMessageId(channel, "mom@mom.test")}>`);
    expect(threadChannel(toMom, "r3@example.org")).toBe(channel);
    // A reply to an approval prompt names the prompt's approval (a restart forgets the codes given), and is in the thread.
    const toPrompt = await mail(`Message-ID: <r4@example.org>\nIn-Reply-To: <${momMessageId(channel, "mom@mom.test", "ap:1/é")}>`);
    expect(promptOf(toPrompt)).toEqual({ approvalId: "ap:1/é", channel, promptId: toPrompt.inReplyTo!.replace(/^<|>$/g, "") });
    expect(threadChannel(toPrompt, "r4@example.org")).toBe(channel);
    expect(promptOf(toMom)).toBeUndefined();
    const other = await mail("Message-ID: <other@example.org>");
    expect(threadChannel(other, "other@example.org")).not.toBe(channel);
  });

  it("an answer goes to Reply-To or From, the other allowed recipients in Cc, never to mom", async () => {
    const allowed = (a: string) => senderAllowed(a, ["@example.org", "zoe@else.org"]);
    const p = await mail("Message-ID: <m@example.org>\nFrom: Ana <ana@example.org>\nTo: mom@mom.test, Bob <BOB@example.org>\nCc: eve@evil.org, zoe@else.org\nSubject: Re: plan\nReferences: <root@x>");
    expect(mailInfo(p, "m@example.org", "c", "mom@mom.test", allowed)).toEqual({ id: "m@example.org", channel: "c", subject: "Re: plan", references: ["<root@x>", "<m@example.org>"], to: ["ana@example.org"], cc: ["bob@example.org", "zoe@else.org"] });
    const redirected = await mail("From: ana@example.org\nReply-To: team@example.org\nTo: mom@mom.test");
    expect(mailInfo(redirected, "n", "c", "mom@mom.test", allowed).to).toEqual(["team@example.org"]);
    const elsewhere = await mail("From: ana@example.org\nReply-To: eve@evil.org\nTo: mom@mom.test");
    expect(mailInfo(elsewhere, "n", "c", "mom@mom.test", allowed).to).toEqual(["ana@example.org"]);
    expect([replySubject("plan"), replySubject("RE: plan"), replySubject(" re: plan ")]).toEqual(["Re: plan", "RE: plan", "re: plan"]);
  });

  it("allowFrom: addresses and whole domains, any case", () => {
    expect(senderAllowed("Ana@Example.org", ["@example.org"])).toBe(true);
    expect(senderAllowed("ana@sub.example.org", ["@example.org"])).toBe(false);
    expect(senderAllowed("ana@notexample.org", ["@example.org"])).toBe(false);
    expect(senderAllowed("zoe@else.org", ["ZOE@else.org"])).toBe(true);
  });
});

describe("mail no person wrote", () => {
  it("automatic replies and lists are recognised; Auto-Submitted: no is a person's", async () => {
    expect(autoReplyReason(await mail("Auto-Submitted: auto-replied"))).toBe("Auto-Submitted: auto-replied");
    expect(autoReplyReason(await mail("Auto-Submitted: auto-generated"))).toBe("Auto-Submitted: auto-generated");
    expect(autoReplyReason(await mail("X-Autoreply: yes"))).toBe("x-autoreply header");
    expect(autoReplyReason(await mail("X-Autorespond: yes"))).toBe("x-autorespond header");
    expect(autoReplyReason(await mail("List-Id: <dev.example.org>"))).toBe("List-Id header");
    expect(autoReplyReason(await mail("Precedence: junk"))).toBe("Precedence: junk");
    expect(autoReplyReason(await mail("Auto-Submitted: no\nPrecedence: first-class"))).toBeUndefined();
  });

  it("a delivery report says why and which message bounced; a null sender or MAILER-DAEMON is a bounce too", async () => {
    const report = await mail(
      `From: Mail Delivery System <MAILER-DAEMON@mx.example.org>
Content-Type: multipart/report; report-type=delivery-status; boundary="B"`,
      `--B
Content-Type: text/plain

could not deliver
--B
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.org

Final-Recipient: rfc822; ghost@gone.org
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp; 550 5.1.1 <ghost@gone.org> User doesn't exist:
    ghost@gone.org

--B
Content-Type: text/rfc822-headers

Message-ID: <mom.abc.1@mom.test>
Subject: Re: hi

--B--`,
    );
    expect(await bounceOf(report, (b) => simpleParser(b))).toEqual({ original: "mom.abc.1@mom.test", why: "550 5.1.1 <ghost@gone.org> User doesn't exist: ghost@gone.org" });
    expect(await bounceOf(await mail("Return-Path: <>\nSubject: Delivery failure"), (b) => simpleParser(b))).toEqual({ why: "Delivery failure" });
    expect(await bounceOf(await mail("From: postmaster@example.org\nSubject: undeliverable"), (b) => simpleParser(b))).toEqual({ why: "undeliverable" });
    expect(await bounceOf(await mail("Return-Path: <ana@example.org>\nFrom: ana@example.org"), (b) => simpleParser(b))).toBeUndefined();
  });
});

describe("approval codes", () => {
  it('the first line decides: "approve <code>" / "deny <code>", any case; anything else does not', () => {
    expect(ApprovalCodes.read("Approve 12345678, go ahead\nthanks")).toEqual({ decision: "allow-once", code: "12345678" });
    expect(ApprovalCodes.read("\n  DENY 87654321")).toEqual({ decision: "deny", code: "87654321" });
    expect(ApprovalCodes.read("I approve 12345678")).toBeUndefined();
    expect(ApprovalCodes.read("approve it\napprove 12345678")).toBeUndefined();
    expect(ApprovalCodes.read("approve 1234")).toBeUndefined();
  });
});
