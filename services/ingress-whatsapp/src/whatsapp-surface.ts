import { approvalButtonId, type ChatSurface, clip, markupDialect, type Placement, RecentMap, type SharedFile } from "@mom/ingress-sdk";
import { GraphApi, GraphError, WINDOW_CLOSED } from "./graph-api.js";
import type { Logger } from "pino";
import { whatsappMarkup } from "./whatsapp-format.js";
import { WHATSAPP_MESSAGE_LIMIT } from "./whatsapp-options.js";

const WINDOW_MS = 24 * 60 * 60 * 1000;
/** Characters in the body of an interactive (reply-button) message. */
export const WHATSAPP_BUTTON_BODY_LIMIT = 1024;

/** WhatsApp's markup; an approval prompt is the body of a reply-button message. */
export const whatsappDialect = markupDialect(whatsappMarkup, { limit: WHATSAPP_MESSAGE_LIMIT, promptLimit: WHATSAPP_BUTTON_BODY_LIMIT, mention: (id) => `+${id}` });

/** A send refused because the person's last message is more than 24 hours old. */
export class WindowClosedError extends Error {
  constructor(waId: string, lastAt?: number) {
    super(
      `the 24-hour customer-service window with ${waId} is closed${lastAt ? ` (their last message: ${new Date(lastAt).toISOString()})` : ""}: ` +
        "WhatsApp only delivers template messages until they write again, so this message was not sent",
    );
  }
}

/**
 * The ChatSurface over the Cloud API. WhatsApp cannot edit or delete a message, so there is no
 * progress message (the MessageLayout posts the answer only); "typing…" rides on the read receipt
 * of the message being answered. Every free-form send is checked against the 24-hour window.
 */
export class WhatsAppSurface implements ChatSurface {
  readonly dialect = whatsappDialect;
  /** wa_id -> when they last wrote. */
  private readonly lastInbound = new RecentMap<number>(50_000);

  constructor(
    private readonly api: GraphApi,
    private readonly log: Logger,
  ) {}

  /**
   * Called for every message someone sends, with when they sent it (the message's own timestamp:
   * Meta re-delivers webhooks for days after an outage, and the window runs from the writing, not
   * the delivery). It opens or extends their window; a late, older message never shortens it.
   */
  wrote(waId: string, at: number): void {
    const when = Math.min(at, Date.now());
    const known = this.lastInbound.get(waId);
    if (known === undefined || when > known) this.lastInbound.set(waId, when);
  }

  /** Why nothing free-form can be sent to `waId` now, or undefined while their window is open. */
  windowClosed(waId: string): WindowClosedError | undefined {
    const last = this.lastInbound.get(waId);
    return last !== undefined && Date.now() - last > WINDOW_MS ? new WindowClosedError(waId, last) : undefined;
  }

  private async send(to: string, body: Record<string, unknown>, at: Placement): Promise<string> {
    const closed = this.windowClosed(to);
    if (closed) throw closed;
    try {
      return await this.api.send({ to, recipient_type: "individual", ...body, ...(at.replyTo && { context: { message_id: at.replyTo } }) });
    } catch (err) {
      if (err instanceof GraphError && err.code === WINDOW_CLOSED) throw new WindowClosedError(to);
      throw err;
    }
  }

  post(channel: string, text: string, at: Placement): Promise<string> {
    return this.send(channel, { type: "text", text: { body: text, preview_url: false } }, at);
  }

  async upload(channel: string, file: SharedFile, at: Placement): Promise<void> {
    const id = await this.api.uploadMedia(file.bytes, file.mimeType ?? "application/octet-stream", file.filename);
    await this.send(channel, { type: "document", document: { id, filename: file.filename, ...(file.title !== file.filename && { caption: file.title }) } }, at);
  }

  async typing(_channel: string, at: Placement): Promise<void> {
    if (at.replyTo) await this.api.markRead(at.replyTo, true);
  }

  /**
   * In the asker's chat, and in the chat of every approver who is not the asker: a WhatsApp chat
   * belongs to one person, so approvers would not see the prompt otherwise. An approver who
   * cannot be reached (their 24-hour window is closed) is logged; the asker's copy must go out.
   */
  async prompt(channel: string, text: string, approvalId: string, at: Placement, approvers: string[]): Promise<string> {
    // The buttons name the asker's chat: an approver's click after a restart still decides there.
    const buttons = [
      { type: "reply", reply: { id: approvalButtonId("allow", approvalId, undefined, channel), title: "Allow once" } },
      { type: "reply", reply: { id: approvalButtonId("deny", approvalId, undefined, channel), title: "Deny" } },
    ];
    const body = { type: "interactive", interactive: { type: "button", body: { text: clip(text, WHATSAPP_BUTTON_BODY_LIMIT) }, action: { buttons } } };
    const id = await this.send(channel, body, at);
    for (const approver of approvers.filter((a) => a !== channel)) {
      await this.send(approver, body, {}).catch((err: unknown) => this.log.warn({ err, approver }, `could not show an approval prompt to approver ${approver}: ${(err as Error).message}`));
    }
    return id;
  }

  /** Buttons cannot be taken back: the outcome is a reply to the prompt (a plain message when it is not known, after a restart). */
  async closePrompt(channel: string, messageId: string, text: string): Promise<void> {
    await this.post(channel, text.split("\n").at(-1) ?? text, messageId ? { replyTo: messageId } : {});
  }
}
