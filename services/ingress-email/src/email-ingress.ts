import { ApprovalCodes, type IngressDefinition, RecentMap, storedPlatformIds } from "@mom/ingress-sdk";
import EmailReplyParser from "email-reply-parser";
import { simpleParser } from "mailparser";
import nodemailer from "nodemailer";
import { addresses, autoReplyReason, bounceOf, type MailInfo, mailInfo, messageIdOf, promptOf, threadChannel } from "./email-mail.js";
import { EmailSettings, senderAllowed } from "./email-settings.js";
import { EmailSurface } from "./email-surface.js";
import { ImapMailbox } from "./imap-mailbox.js";

const parse = (source: Buffer) => simpleParser(source, { keepDeliveryStatus: true });

/**
 * mom over e-mail (docs/email.md): the unseen mail of one IMAP folder becomes messages of their
 * thread's channel; answers go out over SMTP as replies in the thread. The rest is the shell's.
 */
export const emailIngress: IngressDefinition<typeof EmailSettings> = {
  platform: "email",
  settings: EmailSettings,
  async connect(ctx) {
    const { settings: s, adapter, log } = ctx;
    const failed = (what: string) => (err: Error) => {
      throw new Error(`email adapter "${adapter}": ${what}${err.message}`, { cause: err });
    };
    const auth = { user: s.user ?? s.address, pass: s.password };
    const smtpPort = s.smtpPort ?? (s.smtpTls ? 465 : 587);
    const smtp = nodemailer.createTransport({ host: s.smtpHost, port: smtpPort, secure: s.smtpTls ?? false, ...(s.smtpAuth !== false && { auth }) });
    await smtp.verify().catch(failed(`SMTP ${s.smtpHost}:${smtpPort}: `));
    const mails = new RecentMap<MailInfo>(10_000);
    const latest = new RecentMap<MailInfo>(10_000);
    const remember = (m: MailInfo) => (mails.set(m.id, m), latest.set(m.channel, m));
    const self = s.address.toLowerCase();
    const allowed = (a: string) => senderAllowed(a, s.allowFrom);
    const codes = new ApprovalCodes("the approval mail", { key: `${s.address}\n${s.password}` });
    const mailbox: ImapMailbox = new ImapMailbox({
      imap: { host: s.imapHost, port: s.imapPort ?? 993, secure: s.imapTls ?? true, auth },
      mailbox: s.mailbox ?? "INBOX",
      log,
      handle: (source) => onMail(source),
    });
    // A mail answered after a restart is looked up in the folder by its Message-ID.
    const lookup = async (id: string) => {
      const source = await mailbox.find(id);
      const p = source && (await parse(source));
      return p ? mailInfo(p, id, threadChannel(p, id), self, allowed) : undefined;
    };
    const known = async (id: string) => mails.get(id) ?? (await lookup(id));
    // A thread this process has seen nothing of (restarted mid-run, a scheduled event's answer): its newest mail that reached mom.
    const lastOfThread = async (channel: string) => {
      const last = await ctx.history.lastOf(channel);
      const id = last && (await storedPlatformIds(ctx.history, channel, last, (m) => (m.sender?.isBot === false ? m.id : undefined))).at(-1);
      return id ? known(id) : undefined;
    };
    const surface = new EmailSurface({
      smtp,
      log,
      codes,
      from: { name: s.name ?? "mom", address: s.address },
      find: async (id, channel) => (id && (await known(id))) || latest.get(channel) || (await lastOfThread(channel)),
      sent: remember,
    });
    /** One unseen mail: handed to mom, or an approval decided by code, or (bounces, robots, strangers) only logged. True once done. */
    const onMail = async (source: Buffer): Promise<boolean> => {
      const p = await parse(source);
      const id = messageIdOf(p, source);
      const from = addresses(p.from)[0];
      const about = { messageId: id, from, subject: p.subject };
      if (from === self) return true;
      const bounce = await bounceOf(p, parse);
      if (bounce) {
        const recorded = bounce.original !== undefined && (await ctx.inbound.undelivered(bounce.original, `bounced: ${bounce.why}`));
        return log.info({ ...about, original: bounce.original, recorded }, `bounce not answered: ${bounce.why}`), true;
      }
      const robot = autoReplyReason(p);
      if (robot) return log.info(about, `automatic mail not answered (${robot})`), true;
      if (!from || !allowed(from)) return log.info(about, "sender not on allowFrom: ignored"), true;
      const channel = threadChannel(p, id);
      const mail = mailInfo(p, id, channel, self, allowed);
      remember(mail);
      const visible = new EmailReplyParser().parseReply(p.text ?? "").trim();
      const command = ApprovalCodes.read(visible);
      if (command) {
        // A code in a reply to another mail of the thread decides the thread's waiting approval it was given for; the outcome answers this mail.
        const recall = async () => promptOf(p) ?? (await ctx.inbound.waitingApprovals(channel)).map((approvalId) => ({ approvalId, channel, promptId: id }));
        const { refusal } = await codes.decide(ctx.inbound, command, { id: from, username: from }, recall);
        if (refusal) await surface.send(channel, { replyTo: id }, refusal);
        return true;
      }
      const name = p.from?.value[0]?.name;
      await ctx.inbound.receive({
        id,
        channelId: channel,
        timestamp: (p.date ?? new Date()).toISOString(),
        sender: { id: from, username: from, ...(name && { displayName: name }), isBot: false },
        // The subject starts the conversation; a reply's text is what it adds (quoted text and signature removed).
        text: mail.references.length === 1 && p.subject ? `Subject: ${p.subject}\n\n${visible}` : visible,
        ...(p.text && { rawText: p.text }),
        files: p.attachments
          .filter((a) => !a.contentType.startsWith("message/"))
          .map((a, i) => ({ filename: a.filename ?? `attachment-${i + 1}`, size: a.size, mimeType: a.contentType, download: async () => ({ bytes: new Uint8Array(a.content) }) })),
        // E-mail is addressed: every mail to mom asks it something, between the sender and mom.
        isMention: true,
        isDirect: true,
        // So that each answer's Placement names the mail it answers.
        replyTo: id,
        refuse: (text) => surface.send(channel, { replyTo: id }, text),
      });
      return true;
    };
    await mailbox.open().catch(failed(""));
    return { surface, start: () => mailbox.start(), stop: () => mailbox.stop(), problem: () => mailbox.problem() };
  },
};
