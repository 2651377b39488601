import { approvalButtonId, type ChatSurface, type Dialect, markdownDialect, type Placement, type SharedFile } from "@mom/ingress-sdk";
import { type Api, GrammyError, InputFile } from "grammy";
import { markdownToTelegramHtml } from "./telegram-html.js";

/** Button callback data: `mom:allow:<approvalId>` / `mom:deny:<approvalId>` (Telegram allows 64 bytes). */
export const APPROVAL_BUTTON_PREFIX = "mom:";

/** Telegram's limit for one message, in characters after entity parsing. */
export const TELEGRAM_MESSAGE_LIMIT = 4096;

/**
 * The shared notes are written in Markdown and each message is turned into Telegram HTML as it is
 * sent, so splitting happens on Markdown, where it is safe.
 */
export const telegramDialect: Dialect = markdownDialect({ limit: TELEGRAM_MESSAGE_LIMIT, mention: (id) => `[${id}](tg://user?id=${id})` });

/** Editing a message to the text it has is refused by Telegram; there is nothing to do then. */
const unlessNotModified = (err: unknown) => {
  if (!(err instanceof GrammyError && err.description.includes("message is not modified"))) throw err;
};

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
    await this.api.editMessageText(channel, Number(messageId), markdownToTelegramHtml(text), { parse_mode: "HTML", link_preview_options: { is_disabled: true } }).catch(unlessNotModified);
  }

  /** A group's admins can delete the bot's messages: one gone is posted anew (MessageLayout). */
  isGone(err: unknown): boolean {
    return err instanceof GrammyError && /message to (edit|delete) not found/.test(err.description);
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
    const keyboard = [[{ text: "Allow once", callback_data: approvalButtonId("allow", approvalId, APPROVAL_BUTTON_PREFIX) }, { text: "Deny", callback_data: approvalButtonId("deny", approvalId, APPROVAL_BUTTON_PREFIX) }]];
    const m = await this.api.sendMessage(channel, markdownToTelegramHtml(text), { parse_mode: "HTML", reply_markup: { inline_keyboard: keyboard }, ...this.where(at) });
    return String(m.message_id);
  }

  async closePrompt(channel: string, messageId: string, text: string): Promise<void> {
    await this.api.editMessageText(channel, Number(messageId), markdownToTelegramHtml(text), { parse_mode: "HTML", reply_markup: { inline_keyboard: [] } }).catch(unlessNotModified);
  }
}
