import { type ChatSurface, type Dialect, type Placement, type SharedFile, UNICODE_MARKS, fenceSafe } from "@mom/ingress-sdk";
import { type Api, GrammyError, InputFile } from "grammy";
import markdownEscape from "markdown-escape";
import { markdownToTelegramHtml } from "./telegram-html.js";
import { TELEGRAM_MESSAGE_LIMIT } from "./telegram-options.js";

/** Button callback data: `mom:allow:<approvalId>` / `mom:deny:<approvalId>` (Telegram allows 64 bytes). */
export function approvalButton(decision: "allow" | "deny", approvalId: string): string {
  return `mom:${decision}:${approvalId}`;
}

export function parseApprovalButton(data: string): { decision: "allow-once" | "deny"; approvalId: string } | undefined {
  const m = /^mom:(allow|deny):(.+)$/.exec(data);
  return m ? { decision: m[1] === "allow" ? "allow-once" : "deny", approvalId: m[2]! } : undefined;
}

/**
 * The shared notes are written in Markdown (escaped with markdown-escape) and each message is
 * turned into Telegram HTML as it is sent, so splitting happens on Markdown, where it is safe.
 */
export const telegramDialect: Dialect = {
  limit: TELEGRAM_MESSAGE_LIMIT,
  escape: (t) => markdownEscape(t),
  bold: (t) => `**${t}**`,
  italic: (t) => `_${t}_`,
  // A code span that contains backticks is delimited by two (CommonMark).
  code: (t) => (t.includes("`") ? `\`\` ${t} \`\`` : `\`${t}\``),
  codeBlock: (t) => "```\n" + (fenceSafe(t.trimEnd()) || " ") + "\n```",
  mention: (id) => `[${id}](tg://user?id=${id})`,
  fromMarkdown: (md) => md,
  marks: UNICODE_MARKS,
};

const notModified = (err: unknown) => err instanceof GrammyError && err.description.includes("message is not modified");

/** The ChatSurface over grammY's Api (429s are waited out by the auto-retry transformer). */
export class TelegramSurface implements ChatSurface {
  readonly dialect = telegramDialect;

  constructor(private readonly api: Api) {}

  private where(at: Placement) {
    return {
      ...(at.thread && { message_thread_id: Number(at.thread) }),
      ...(at.replyTo && { reply_parameters: { message_id: Number(at.replyTo), allow_sending_without_reply: true } }),
    };
  }

  async post(channel: string, text: string, at: Placement): Promise<string> {
    const m = await this.api.sendMessage(channel, markdownToTelegramHtml(text), { parse_mode: "HTML", link_preview_options: { is_disabled: true }, ...this.where(at) });
    return String(m.message_id);
  }

  async edit(channel: string, messageId: string, text: string): Promise<void> {
    await this.api.editMessageText(channel, Number(messageId), markdownToTelegramHtml(text), { parse_mode: "HTML", link_preview_options: { is_disabled: true } }).catch((err: unknown) => {
      if (!notModified(err)) throw err;
    });
  }

  async delete(channel: string, messageId: string): Promise<void> {
    await this.api.deleteMessage(channel, Number(messageId));
  }

  async upload(channel: string, file: SharedFile, at: Placement): Promise<void> {
    const caption = file.title !== file.filename ? { caption: file.title } : {};
    await this.api.sendDocument(channel, new InputFile(file.bytes, file.filename), { ...caption, ...this.where(at) });
  }

  async typing(channel: string, at: Placement): Promise<void> {
    await this.api.sendChatAction(channel, "typing", at.thread ? { message_thread_id: Number(at.thread) } : {});
  }

  async prompt(channel: string, text: string, approvalId: string, at: Placement): Promise<string> {
    // Approvers are members of the chat (admins): they see the prompt there.
    const keyboard = [[{ text: "Allow once", callback_data: approvalButton("allow", approvalId) }, { text: "Deny", callback_data: approvalButton("deny", approvalId) }]];
    const m = await this.api.sendMessage(channel, markdownToTelegramHtml(text), { parse_mode: "HTML", reply_markup: { inline_keyboard: keyboard }, ...this.where(at) });
    return String(m.message_id);
  }

  async closePrompt(channel: string, messageId: string, text: string): Promise<void> {
    await this.api.editMessageText(channel, Number(messageId), markdownToTelegramHtml(text), { parse_mode: "HTML", reply_markup: { inline_keyboard: [] } }).catch((err: unknown) => {
      if (!notModified(err)) throw err;
    });
  }
}
