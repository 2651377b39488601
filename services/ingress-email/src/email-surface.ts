import { type ChatSurface, type Dialect, fenceSafe, type FileOutcome, MessageLayout, type MessageRun, type Placement, type RunView, type SharedFile, UNICODE_MARKS } from "@mom/ingress-sdk";
import { escape } from "html-escaper";
import markdownEscape from "markdown-escape";
import { Marked } from "marked";
import type { Transporter } from "nodemailer";
import { type ApprovalCodes, decideHint } from "./email-approvals.js";
import { type MailInfo, momMessageId, replySubject } from "./email-mail.js";

/** The agent's Markdown is the text part as it is (it reads well as plain text) and, rendered, the HTML part. */
export const emailDialect: Dialect = {
  limit: 200_000, // one mail carries the whole answer
  escape: (t) => markdownEscape(t),
  bold: (t) => `**${t}**`,
  italic: (t) => `_${t}_`,
  code: (t) => (t.includes("`") ? `\`\` ${t} \`\`` : `\`${t}\``),
  codeBlock: (t) => "```\n" + (fenceSafe(t.trimEnd()) || " ") + "\n```",
  mention: (address) => address,
  fromMarkdown: (md) => md,
  marks: UNICODE_MARKS,
};

// Raw HTML in the agent's text is shown, never interpreted.
const html = new Marked({ gfm: true, async: false, renderer: { html: ({ text }) => escape(text) } });

export interface EmailSurfaceOptions {
  smtp: Transporter;
  from: { name: string; address: string };
  codes: ApprovalCodes;
  /** The mail a Message-ID (without brackets) names, else the thread's last one this process saw, else its last one that reached mom. */
  find(id: string | undefined, channel: string): Promise<MailInfo | undefined>;
  /** Each mail mom sent, so that a reply to it is answered in its thread. */
  sent(mail: MailInfo): void;
}

type Batch = { id: string; texts: string[]; files: SharedFile[]; at?: Placement };

/** A run as replies in its thread. E-mail has no edits, so MessageLayout shows no progress; EmailLayout sends the answer as one mail. */
export class EmailSurface implements ChatSurface {
  readonly dialect = emailDialect;
  private readonly batches = new Map<string, Batch>();

  constructor(private readonly o: EmailSurfaceOptions) {}

  /** What `draw` posts and uploads in `channel` goes out as one mail (the presenter draws a channel's calls one at a time). */
  async gather<T>(channel: string, draw: () => Promise<T>): Promise<T> {
    const batch: Batch = { id: momMessageId(channel, this.o.from.address), texts: [], files: [] };
    this.batches.set(channel, batch);
    try {
      const out = await draw();
      if (batch.texts.length || batch.files.length) await this.send(channel, batch.at ?? {}, batch.texts.join("\n\n"), { files: batch.files, id: batch.id });
      return out;
    } finally {
      this.batches.delete(channel);
    }
  }

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
    await this.o.smtp.sendMail({ from: this.o.from, to, cc, ...threading, headers, text, html: html.parse(text) as string, attachments });
    this.o.sent({ id, channel, subject: parent.subject, references: [...parent.references, `<${id}>`], to, cc });
    return id;
  }

  async post(channel: string, text: string, at: Placement): Promise<string> {
    const batch = this.batches.get(channel);
    if (!batch) return this.send(channel, at, text);
    batch.texts.push(text);
    batch.at ??= at;
    return batch.id;
  }

  async upload(channel: string, file: SharedFile, at: Placement): Promise<void> {
    const batch = this.batches.get(channel);
    if (batch) batch.files.push(file);
    else await this.send(channel, at, file.title, { files: [file] });
  }

  /** To the approvers (the thread's people in Cc), with a one-time code to reply with. */
  prompt(channel: string, text: string, approvalId: string, at: Placement, approvers: string[]): Promise<string> {
    const id = momMessageId(channel, this.o.from.address);
    const code = this.o.codes.issue(approvalId, channel, id);
    return this.send(channel, at, `${text}\n\n${decideHint(code)}`, { to: approvers, id });
  }

  /** A mail cannot lose its buttons: the outcome is a reply to the prompt, and its code is spent. */
  async closePrompt(channel: string, messageId: string, text: string): Promise<void> {
    this.o.codes.closed(messageId, text.split("\n").at(-1) ?? "ended");
    await this.send(channel, { replyTo: messageId }, text);
  }
}

/** The MessageLayout, with a run's answer, notes and files gathered into one mail. */
export class EmailLayout extends MessageLayout {
  constructor(private readonly mail: EmailSurface) {
    super(mail);
  }

  override finish(channel: string, view: RunView, run: MessageRun | undefined, files: FileOutcome[]): Promise<string[]> {
    return this.mail.gather(channel, () => super.finish(channel, view, run, files));
  }
}
