import { type ApprovalCodes, type ChatSurface, markdownDialect, markdownToHtml, type Placement, type SharedFile } from "@mom/ingress-sdk";
import type { Transporter } from "nodemailer";
import pRetry from "p-retry";
import type { Logger } from "pino";
import { type MailInfo, momMessageId, replySubject } from "./email-mail.js";

/** The agent's Markdown is the text part as it is (it reads well as plain text) and, rendered, the HTML part; one mail carries the whole answer. */
export const emailDialect = markdownDialect({ limit: 200_000, mention: (address) => address });

/** An SMTP failure that may pass if tried again: a 4xx reply, or a connection lost or not made. */
function transient(err: Error): boolean {
  const e = err as Error & { responseCode?: number; code?: string };
  return (e.responseCode !== undefined && e.responseCode >= 400 && e.responseCode < 500) || ["ECONNECTION", "ETIMEDOUT", "ESOCKET"].includes(e.code ?? "");
}

export interface EmailSurfaceOptions {
  smtp: Transporter;
  log: Logger;
  /** How long a transiently refused mail is tried again (default: 6 retries, 0.5 s doubling, ~25 s). */
  retries?: number;
  from: { name: string; address: string };
  codes: ApprovalCodes;
  /** The mail a Message-ID (without brackets) names, else the thread's last one this process saw, else its last one that reached mom. */
  find(id: string | undefined, channel: string): Promise<MailInfo | undefined>;
  /** Each mail mom sent, so that a reply to it is answered in its thread. */
  sent(mail: MailInfo): void;
}

/** A run as replies in its thread. E-mail has no edits, so MessageLayout shows no progress; the answer and its files go out as one mail. */
export class EmailSurface implements ChatSurface {
  readonly dialect = emailDialect;

  constructor(private readonly o: EmailSurfaceOptions) {}

  /** Sends a reply to the mail `at` names (else the thread's last); resolves with its Message-ID without brackets. */
  async send(channel: string, at: Placement, text: string, o: { files?: SharedFile[]; id?: string; to?: string[] } = {}): Promise<string> {
    const parent = await this.o.find(at.replyTo ?? at.thread, channel);
    if (!parent) throw new Error(`no mail of thread ${channel} is known to answer (${at.replyTo ?? at.thread ?? "none named"})`);
    const id = o.id ?? momMessageId(channel, this.o.from.address);
    const to = o.to?.length ? o.to : parent.to;
    const cc = [...parent.to, ...parent.cc].filter((a) => !to.includes(a));
    const attachments = (o.files ?? []).map((f) => ({ filename: f.filename, content: Buffer.from(f.bytes), ...(f.mimeType && { contentType: f.mimeType }) }));
    // RFC 3834: an automatic answer says so, so that other robots (vacation notices) do not answer it.
    const headers = { "Auto-Submitted": "auto-replied" };
    const threading = { subject: replySubject(parent.subject), messageId: `<${id}>`, inReplyTo: `<${parent.id}>`, references: parent.references };
    // A 4xx (the server's auth backend restarting, greylisting) is tried again: the answer is not lost to it.
    const mail = { from: this.o.from, to, cc, ...threading, headers, text, html: markdownToHtml(text), attachments };
    const onFailedAttempt = ({ error, retriesLeft }: { error: Error; retriesLeft: number }) => void (retriesLeft > 0 && transient(error) && this.o.log.warn({ messageId: id, retriesLeft }, `SMTP refused the mail for now (${error.message}); trying again`));
    await pRetry(() => this.o.smtp.sendMail(mail), { retries: this.o.retries ?? 6, minTimeout: 500, maxTimeout: 10_000, shouldRetry: ({ error }) => transient(error), onFailedAttempt });
    this.o.sent({ id, channel, subject: parent.subject, references: [...parent.references, `<${id}>`], to, cc });
    return id;
  }

  post(channel: string, text: string, at: Placement): Promise<string> {
    return this.send(channel, at, text);
  }

  postWithFiles(channel: string, text: string, files: SharedFile[], at: Placement): Promise<string> {
    return this.send(channel, at, text, { files });
  }

  async upload(channel: string, file: SharedFile, at: Placement): Promise<void> {
    await this.send(channel, at, file.title, { files: [file] });
  }

  /** To the approvers (the thread's people in Cc), with a one-time code to reply with. */
  prompt(channel: string, text: string, approvalId: string, at: Placement, approvers: string[]): Promise<string> {
    const id = momMessageId(channel, this.o.from.address, approvalId);
    const code = this.o.codes.issue(approvalId, channel, id);
    const hint = `To decide, reply to this mail with "approve ${code}" or "deny ${code}" as its first line.`;
    return this.send(channel, at, `${text}\n\n${hint}`, { to: approvers, id });
  }

  /** A mail cannot lose its buttons: the outcome is a reply to the prompt, and its code is spent. */
  async closePrompt(channel: string, messageId: string, text: string): Promise<void> {
    this.o.codes.closed(messageId, text.split("\n").at(-1) ?? "ended");
    await this.send(channel, { replyTo: messageId }, text);
  }
}
