import { splitMessage } from "@mom/format";
import type { Dialect } from "./dialect.js";
import { activityLines, answerText, progressText, queuedText, usageLine } from "./notes.js";
import { postText } from "./posts.js";
import { RecentMap } from "./recent.js";
import type { AnswerParts, Layout } from "./presenter.js";
import type { Ev, RunView } from "./run-view.js";
import type { FileOutcome, SharedFile } from "./shared-files.js";

/** Where a message goes within a channel: a thread (topic) and the message it answers. */
export interface Placement {
  thread?: string;
  replyTo?: string;
  /** The platform id of who wrote `replyTo` (the run's trigger), for platforms whose replies notify them. */
  replyToUser?: string;
}

/**
 * The narrow surface a chat platform implements for the MessageLayout: plain messages, edits
 * where the platform has them, files, typing, and a prompt with Allow once / Deny buttons.
 */
export interface ChatSurface {
  dialect: Dialect;
  /** Posts a message; resolves with its id. */
  post(channel: string, text: string, at: Placement): Promise<string>;
  /** Absent on platforms that cannot edit (WhatsApp): no progress message is shown there. */
  edit?(channel: string, messageId: string, text: string): Promise<void>;
  /** True when a failed edit means the message is not there any more (someone deleted it): it is posted anew then. */
  isGone?(err: unknown): boolean;
  delete?(channel: string, messageId: string): Promise<void>;
  upload(channel: string, file: SharedFile, at: Placement): Promise<void>;
  /** Present where one message carries text and files (a mail): a run's answer goes out with its files in its last message. */
  postWithFiles?(channel: string, text: string, files: SharedFile[], at: Placement): Promise<string>;
  typing?(channel: string, at: Placement): Promise<void>;
  /**
   * Posts `text` with Allow once / Deny buttons that carry `approvalId`; resolves with the message
   * id. `approvers` are who may decide (a platform where they cannot see the chat may reach them
   * elsewhere).
   */
  prompt(channel: string, text: string, approvalId: string, at: Placement, approvers: string[]): Promise<string>;
  /** The prompt without its buttons, reading `text`. */
  closePrompt(channel: string, messageId: string, text: string): Promise<void>;
  deadline?(expiresAt: string): string;
}

export interface MessageRun {
  progressId?: string;
  shown?: string;
}

/**
 * A run as plain chat messages: a progress message (edited, coalesced) that becomes the answer,
 * more messages when the answer is long, the files after it, the receipts' activity and the usage
 * line last. Used by platforms without threads of details (Telegram, WhatsApp).
 */
export class MessageLayout implements Layout<MessageRun, string> {
  readonly dialect: Dialect;
  readonly deadline?: (expiresAt: string) => string;
  /** `<channel>:<message id>` -> the id of its "queued" notice. */
  private readonly queuedNotices = new RecentMap<string>(1000);

  constructor(private readonly surface: ChatSurface) {
    this.dialect = surface.dialect;
    if (surface.deadline) this.deadline = surface.deadline.bind(surface);
  }

  private at(view: RunView): Placement {
    return { ...(view.replyTo && { thread: view.replyTo }), ...(view.trigger && { replyTo: view.trigger.messageId, replyToUser: view.trigger.senderId }) };
  }

  async open(channel: string, view: RunView): Promise<MessageRun> {
    if (!this.surface.edit) return {};
    const text = progressText(view, this.dialect);
    return { progressId: await this.surface.post(channel, text, this.at(view)), shown: text };
  }

  /** What another process needs to go on with the run: its progress message's id. */
  resumeForm(run: MessageRun): { progressId: string } | undefined {
    return run.progressId ? { progressId: run.progressId } : undefined;
  }

  /** A run another process opened: its progress message is edited from here on (what it shows is not known: the next edit rewrites it). */
  resume(form: unknown): MessageRun | undefined {
    const id = (form as { progressId?: unknown } | null)?.progressId;
    return typeof id === "string" && id ? { progressId: id } : undefined;
  }

  async progress(channel: string, view: RunView, run: MessageRun): Promise<void> {
    if (!this.surface.edit || !run.progressId) return;
    const text = progressText(view, this.dialect);
    if (text === run.shown) return;
    try {
      await this.surface.edit(channel, run.progressId, text);
    } catch (err) {
      // Someone deleted it: posted anew rather than failing at every redraw (and losing the answer).
      this.unlessGone(err);
      run.progressId = await this.surface.post(channel, text, this.at(view));
    }
    run.shown = text;
  }

  async finish(channel: string, view: RunView, run: MessageRun | undefined, files: FileOutcome[], parts?: AnswerParts): Promise<string[]> {
    const end = view.end!;
    const d = this.dialect;
    if (end.silent) {
      if (run?.progressId) await this.surface.delete?.(channel, run.progressId).catch((err: unknown) => this.unlessGone(err));
      return [];
    }
    const problems = files.flatMap((f) => ("problem" in f ? [f.problem] : []));
    const tail = [activityLines(end.toolActivity, d, end.receiptsUrl).join("\n"), ...problems, d.italic(d.escape(usageLine(end.usage, end.durationMs, d)))];
    const body = answerText(end, d, tail);
    const chunks = splitMessage(body, d.limit);
    const at = this.at(view);
    const next = { ...(at.thread && { thread: at.thread }) };
    const shared = files.flatMap((f) => ("file" in f ? [f.file] : []));
    // Where a message carries files, they go with the answer's last message (not with an edited progress message).
    const withFiles = shared.length > 0 ? this.surface.postWithFiles?.bind(this.surface) : undefined;
    let filesSent = false;
    const ids = (parts?.done ?? []).slice(0, chunks.length - 1);
    for (let i = ids.length; i < chunks.length; i++) {
      const last = i === chunks.length - 1;
      if (i === 0 && run?.progressId && this.surface.edit && (await this.editedInto(channel, run.progressId, chunks[0]!))) ids.push(run.progressId);
      else if (last && withFiles) {
        ids.push(await withFiles(channel, chunks[i]!, shared, i ? next : at));
        filesSent = true;
      } else ids.push(await this.surface.post(channel, chunks[i]!, i ? next : at));
      if (!last) await parts?.sent([...ids]);
    }
    if (!filesSent) for (const file of shared) await this.surface.upload(channel, file, next);
    return ids;
  }

  /** Edits the progress message into `text`; false when someone deleted it (the answer is then posted anew). */
  private async editedInto(channel: string, id: string, text: string): Promise<boolean> {
    try {
      await this.surface.edit!(channel, id, text);
      return true;
    } catch (err) {
      this.unlessGone(err);
      return false;
    }
  }

  private unlessGone(err: unknown): void {
    if (!this.surface.isGone?.(err)) throw err;
  }

  /** A post from another channel: its text (split to the limit), what could not be sent of its file, then the file. */
  async post(channel: string, ev: Ev<"post">, files: FileOutcome[]): Promise<string[]> {
    const problems = files.flatMap((f) => ("problem" in f ? [f.problem] : []));
    const ids: string[] = [];
    for (const chunk of splitMessage([postText(ev, this.dialect), ...problems].join("\n\n"), this.dialect.limit)) ids.push(await this.surface.post(channel, chunk, {}));
    for (const f of files) if ("file" in f) await this.surface.upload(channel, f.file, {});
    return ids;
  }

  /**
   * One notice per message: queued again (a runner that took the channel over queues what waits as
   * runs of its own), it is edited to the new position, not posted twice. Its id is all there is to keep.
   */
  async queued(channel: string, ev: Ev<"run_queued">, shown?: unknown): Promise<unknown> {
    const key = `${channel}:${ev.trigger.messageId}`;
    const known = (shown as { id?: unknown } | undefined)?.id ?? this.queuedNotices.get(key);
    const text = queuedText(ev, this.dialect);
    if (typeof known === "string") {
      this.queuedNotices.set(key, known);
      if (shown !== undefined || !this.surface.edit) return { id: known };
      try {
        await this.surface.edit(channel, known, text);
        return { id: known };
      } catch (err) {
        this.unlessGone(err);
      }
    }
    const id = await this.surface.post(channel, text, { replyTo: ev.trigger.messageId, replyToUser: ev.trigger.senderId });
    this.queuedNotices.set(key, id);
    return { id };
  }

  async rejected(channel: string, ev: Ev<"run_rejected">): Promise<void> {
    await this.surface.post(channel, this.dialect.fromMarkdown(ev.text), { ...(ev.replyTo && { thread: ev.replyTo }), replyTo: ev.trigger.messageId, replyToUser: ev.trigger.senderId });
  }

  prompt(channel: string, view: RunView, _run: MessageRun | undefined, ev: Ev<"approval_requested">, text: string): Promise<string> {
    const at = this.at(view);
    return this.surface.prompt(channel, text, ev.approvalId, { ...((ev.replyTo ?? at.thread) && { thread: ev.replyTo ?? at.thread }) }, ev.approvers);
  }

  resolvePrompt(channel: string, messageId: string, text: string): Promise<void> {
    return this.surface.closePrompt(channel, messageId, text);
  }

  async typing(channel: string, view: RunView): Promise<void> {
    await this.surface.typing?.(channel, this.at(view));
  }
}
