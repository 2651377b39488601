import { type ChatSurface, plainDialect, type SharedFile } from "@mom/ingress-sdk";
import type { Client } from "irc-framework";

/** Approval codes people type: the first 8 characters of the approval id. */
export const approvalCode = (approvalId: string): string => approvalId.replace(/-/g, "").slice(0, 8).toLowerCase();

/**
 * Runs drawn as IRC lines. IRC has no edits, so there is no `edit`: the layout sends only the
 * final answer, cut by the SDK's splitMessage to `lineBytes` characters per piece at paragraph,
 * line and word boundaries; irc-framework then sends each line of a piece as one PRIVMSG and
 * breaks one that is still over `lineBytes` bytes (multi-byte text) between graphemes.
 */
export class IrcSurface implements ChatSurface {
  readonly dialect;
  /** Pending prompts by code -> approval id (a restart forgets them; the runner expires them). */
  private readonly prompts = new Map<string, string>();
  private sent = 0;

  constructor(
    private readonly client: Client,
    lineBytes: number,
  ) {
    this.dialect = plainDialect(lineBytes);
  }

  /** IRC messages have no ids: a counter, for the layout's bookkeeping. */
  async post(channel: string, text: string): Promise<string> {
    this.client.say(channel, text);
    return String(++this.sent);
  }

  async upload(channel: string, file: SharedFile): Promise<void> {
    await this.post(channel, `${this.dialect.marks.file} ${file.title} (${file.filename}, ${file.bytes.length} bytes): files cannot be sent over IRC.`);
  }

  /** The prompt already says who may decide; IRC has no buttons, so the answer is typed. */
  async prompt(channel: string, text: string, approvalId: string): Promise<string> {
    const code = approvalCode(approvalId);
    this.prompts.set(code, approvalId);
    await this.post(channel, `${text}\nTo answer, say: !approve ${code}   or   !deny ${code}`);
    return code;
  }

  /** No edit on IRC: only the outcome line, under the prompt. */
  async closePrompt(channel: string, code: string, text: string): Promise<void> {
    this.prompts.delete(code);
    await this.post(channel, text.split("\n").at(-1) ?? text);
  }

  /** The approval id a typed code stands for. */
  approvalFor(code: string): string | undefined {
    return this.prompts.get(code);
  }
}
