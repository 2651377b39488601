import type { ApprovalCodes, ChatSurface, Dialect, SharedFile } from "@mom/ingress-sdk";
import type { Client } from "irc-framework";

/**
 * Runs drawn as IRC lines, in `plainDialect(lineBytes)`. IRC has no edits, so there is no `edit`:
 * the layout sends only the final answer, cut by the SDK's splitMessage to `lineBytes` characters
 * per piece at paragraph, line and word boundaries; irc-framework then sends each line of a piece
 * as one PRIVMSG and breaks one that is still over `lineBytes` bytes (multi-byte text) between
 * graphemes.
 */
export class IrcSurface implements ChatSurface {
  private sent = 0;

  constructor(
    private readonly client: Client,
    readonly dialect: Dialect,
    readonly codes: ApprovalCodes,
  ) {}

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
    const code = this.codes.issue(approvalId, channel, approvalId);
    await this.post(channel, `${text}\nTo answer, say: !approve ${code}   or   !deny ${code}`);
    return approvalId;
  }

  /** No edit on IRC: only the outcome line, under the prompt; its code decides nothing more. */
  async closePrompt(channel: string, approvalId: string, text: string): Promise<void> {
    const outcome = text.split("\n").at(-1) ?? text;
    this.codes.closed(approvalId, outcome);
    await this.post(channel, outcome);
  }
}
