import { describe, expect, it } from "@jest/globals";
import { ApprovalCodes } from "@mom/ingress-sdk";
import pino from "pino";
import { EmailSurface } from "./email-surface.js";

const parent = { id: "m1@example.org", channel: "c", subject: "plan", references: ["<m1@example.org>"], to: ["ana@example.org"], cc: [] };
const smtpError = (message: string, o: object) => Object.assign(new Error(message), o);

/** The surface over an SMTP server that answers each attempt from `replies` (an error, or accepted). */
function surface(replies: Array<Error | undefined>) {
  const sent: Array<{ messageId: string }> = [];
  const smtp = {
    async sendMail(m: { messageId: string }) {
      const refusal = replies.shift();
      if (refusal) throw refusal;
      sent.push(m);
      return {};
    },
  };
  const s = new EmailSurface({ smtp: smtp as never, log: pino({ level: "silent" }), retries: 3, codes: new ApprovalCodes(), from: { name: "mom", address: "mom@mom.test" }, find: async () => parent, sent: () => {} });
  return { s, sent, replies };
}

describe("sending a mail", () => {
  it("a mail refused for now (a 4xx reply, a lost connection) is sent again, as the same message; a permanent refusal is not", async () => {
    const now = surface([smtpError("Temporary authentication failure", { responseCode: 454, code: "EAUTH" }), smtpError("Connection closed unexpectedly", { code: "ECONNECTION" })]);
    const id = await now.s.post("c", "hello", {});
    expect(now.sent.map((m) => m.messageId)).toEqual([`<${id}>`]);
    const never = surface([smtpError("Mailbox unavailable", { responseCode: 550, code: "EENVELOPE" }), undefined]);
    await expect(never.s.post("c", "hello", {})).rejects.toThrow("Mailbox unavailable");
    expect([never.sent.length, never.replies.length]).toEqual([0, 1]); // tried once
  });
});
