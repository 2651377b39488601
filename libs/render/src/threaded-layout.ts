import { type BatchLimits, batches, formatUsage, splitMessage } from "@mom/format";
import type { Logger } from "pino";
import { DetailMessages } from "./detail-messages.js";
import { clip, type Dialect, firstLine } from "./dialect.js";
import { partitionOutcomes } from "./file-outcomes.js";
import type { Placement } from "./message-layout.js";
import { activityLines, answerText, detailText, progressText, queuedText, statusText, usageLine } from "./notes.js";
import { postText } from "./posts.js";
import type { AnswerParts, Layout } from "./presenter.js";
import { RecentMap } from "./recent.js";
import type { Ev, RunView, Step } from "./run-view.js";
import type { FileOutcome, SharedFile } from "./shared-files.js";

/** One message of a threaded run as the layout composes it; the surface writes it its platform's way. */
export interface ThreadMessage<D = string> {
  text: string;
  /** A message of the details thread, with `detailLimits`: these details (and no text). */
  details?: D[];
  /** Files that go with the message (a surface without `upload`). */
  files?: SharedFile[];
  /** On the answer's last message, with `detailLimits`: the usage (formatUsage) and what the receipts say the run did. */
  footer?: { usage: string; activity: string[] };
  /** Mentions in it notify people (answers, posts); progress, notices and details notify nobody. */
  ping?: boolean;
}

/**
 * What a platform with threads supplies to the ThreadedLayout: a few primitives (post, edit,
 * delete, a thread on a message, a prompt with buttons) and how its details look. Every call gets
 * the Placement the message was posted with; a failed call rejects with the platform's error.
 */
export interface ThreadSurface<D = string, P = string> {
  readonly dialect: Dialect;
  /** The platform's name, in the line saying it refused an upload ("Discord"). */
  readonly name: string;
  /**
   * Details go into the thread as the run goes, and the main message shows only what runs now
   * (Slack). Unset: the main message lists the finished steps, and the details follow at the end.
   */
  readonly liveDetails?: boolean;
  /**
   * How many details one message holds (Discord: 10 embeds, 6,000 characters). Unset: details are
   * text, joined within the dialect's limit, and the usage line is the last of them (the activity
   * ends the answer); set: both go on the answer's last message as its `footer`.
   */
  readonly detailLimits?: BatchLimits<D>;
  /** The platform cannot show which message a post answers: a busy refusal names its sender instead. */
  readonly replyMentions?: boolean;
  /** Files one message carries, when files go with the answer (no `upload`); default 10. */
  readonly filesPerMessage?: number;
  /** Posts a message; resolves with its id. */
  post(channel: string, m: ThreadMessage<D>, at: Placement): Promise<string>;
  edit(channel: string, id: string, m: ThreadMessage<D>, at: Placement): Promise<void>;
  delete(channel: string, id: string, at: Placement): Promise<void>;
  /** Uploads a file on its own, as it comes. Absent: files go with the answer's last messages. */
  upload?(channel: string, file: SharedFile, at: Placement): Promise<void>;
  /**
   * The thread under message `id` for the run's details: a thread started on it and named `name`
   * (Discord), or undefined where the channel has none (the details then follow the answer).
   * Absent: the message's own id, where every message roots a thread (Slack).
   */
  thread?(channel: string, id: string, at: Placement, name: string): Promise<string | undefined>;
  /** A finished step as one detail; undefined leaves it out. Absent (text details only): `detailText`. */
  detail?(step: Step): D | undefined;
  /** Posts `text` with Allow once / Deny buttons for `ev.approvalId` (pinging `ev.approvers` where it can); resolves with where it is. */
  prompt(channel: string, text: string, ev: Ev<"approval_requested">, at: Placement): Promise<P>;
  /** The prompt without its buttons, reading `text`. */
  closePrompt(channel: string, prompt: P, text: string): Promise<void>;
  /** Marks a queued trigger (a reaction), and unmarks it when its run starts. Absent: a "Queued" notice answers it, and becomes the run's main message. */
  markQueued?(channel: string, messageId: string, queued: boolean): Promise<void>;
  /** True when a failed edit means the message is not there any more (someone deleted it). */
  isGone?(err: unknown): boolean;
  typing?(channel: string, at: Placement): Promise<void>;
  deadline?(expiresAt: string): string;
}

/** What the layout keeps of a run: its main message, and the details posted into its thread. */
export interface ThreadedRun<D = string> {
  main?: { id: string; at: Placement };
  shown?: string;
  /** Steps already among the details. */
  reflected: number;
  details: DetailMessages<D, ThreadMessage<D>>;
  detailsAt?: Placement;
}

/**
 * A run on a platform with threads (Slack, Discord): a main message, a reply to the trigger,
 * edited as the run goes (coalesced by the Presenter) that becomes the answer (split when long,
 * more messages following it); the details of the finished steps in a thread under it, gathered
 * into as few messages as fit, either as the run goes or when it ends; files uploaded as they come
 * or sent with the answer; approval prompts with buttons; a queued trigger marked, a busy one
 * told. A main message someone deleted is replaced by a new one, an upload the platform refuses
 * is left out and said so. A silent run leaves nothing.
 */
export class ThreadedLayout<D = string, P = string> implements Layout<ThreadedRun<D>, P> {
  readonly dialect: Dialect;
  readonly deadline?: (expiresAt: string) => string;
  readonly file?: (channel: string, view: RunView, run: ThreadedRun<D> | undefined, f: FileOutcome) => Promise<void>;
  readonly typing?: (channel: string, view: RunView) => Promise<void>;
  /** `<channel>:<trigger id>` of a queued run -> its notice (undefined id: marked instead); a run that never starts is forgotten in time. */
  private readonly queuedNotices = new RecentMap<{ id?: string; at: Placement }>();

  constructor(
    private readonly surface: ThreadSurface<D, P>,
    private readonly log: Logger,
  ) {
    this.dialect = surface.dialect;
    if (surface.deadline) this.deadline = surface.deadline.bind(surface);
    if (surface.upload) this.file = (channel, view, _run, f) => this.upload(channel, view, f);
    if (surface.typing) this.typing = (channel, view) => surface.typing!(channel, this.at(view));
  }

  /** The run's place: its thread, answering its trigger. */
  private at(view: RunView): Placement {
    return { ...(view.replyTo && { thread: view.replyTo }), ...(view.trigger && { replyTo: view.trigger.messageId }) };
  }

  private progressText(view: RunView): string {
    const d = this.dialect;
    return this.surface.liveDetails ? `${d.marks.working} ${d.escape(statusText(view.activity))}` : progressText(view, d);
  }

  /** `shown`: the notice (or mark) an earlier process put up, which the run's start then edits (or unmarks). */
  async queued(channel: string, ev: Ev<"run_queued">, shown?: unknown): Promise<unknown> {
    const key = `${channel}:${ev.trigger.messageId}`;
    const taken = shown as { id?: string; at: Placement } | undefined;
    if (taken && typeof taken === "object" && taken.at) {
      this.queuedNotices.set(key, taken);
      return taken;
    }
    if (this.surface.markQueued) {
      await this.surface.markQueued(channel, ev.trigger.messageId, true);
      this.queuedNotices.set(key, { at: {} });
      return { at: {} };
    }
    const text = queuedText(ev, this.dialect);
    const notice = this.queuedNotices.get(key);
    if (notice?.id) {
      await this.surface.edit(channel, notice.id, { text }, notice.at);
      return notice;
    }
    const at = { replyTo: ev.trigger.messageId };
    const posted = { id: await this.surface.post(channel, { text }, at), at };
    this.queuedNotices.set(key, posted);
    return posted;
  }

  async rejected(channel: string, ev: Ev<"run_rejected">): Promise<void> {
    const d = this.dialect;
    const text = `${this.surface.replyMentions ? `${d.mention(ev.trigger.senderId)} ` : ""}${d.fromMarkdown(ev.text)}`;
    await this.surface.post(channel, { text: clip(text, d.limit) }, { ...(ev.replyTo && { thread: ev.replyTo }), replyTo: ev.trigger.messageId });
  }

  /** The main message: the queued notice edited into it (unmarked), else posted. */
  async open(channel: string, view: RunView): Promise<ThreadedRun<D>> {
    const run = this.newRun();
    const at = this.at(view);
    const text = this.progressText(view);
    const key = view.trigger && `${channel}:${view.trigger.messageId}`;
    const notice = key ? this.queuedNotices.get(key) : undefined;
    if (key) this.queuedNotices.delete(key);
    if (notice && !notice.id) {
      await this.surface.markQueued!(channel, view.trigger!.messageId, false).catch((err: unknown) => this.log.warn({ err, channel }, "could not remove the queued mark"));
    }
    if (notice?.id) {
      try {
        await this.surface.edit(channel, notice.id, { text }, at);
        run.main = { id: notice.id, at };
      } catch (err) {
        // Not where the run is (or deleted): the notice goes, the progress is posted anew.
        if (!this.surface.isGone?.(err)) throw err;
        await this.surface.delete(channel, notice.id, notice.at).catch(() => {});
      }
    }
    run.main ??= { id: await this.surface.post(channel, { text }, at), at };
    run.shown = text;
    return run;
  }

  /**
   * What another process needs to go on with the run: its main message and where that is. The
   * details already posted under it are not kept: a process going on posts the details of the
   * steps it draws itself.
   */
  resumeForm(run: ThreadedRun<D>): { main: { id: string; at: Placement }; detailsAt?: Placement } | undefined {
    return run.main ? { main: run.main, ...(run.detailsAt && { detailsAt: run.detailsAt }) } : undefined;
  }

  /** A run another process opened: its main message is edited from here on, and becomes the answer; its details go on in the same thread. */
  resume(form: unknown): ThreadedRun<D> | undefined {
    const { main, detailsAt } = (form ?? {}) as { main?: { id?: unknown; at?: unknown }; detailsAt?: unknown };
    if (!main || typeof main.id !== "string" || !main.id || !isPlacement(main.at)) return undefined;
    return { ...this.newRun(), main: { id: main.id, at: main.at }, ...(isPlacement(detailsAt) && { detailsAt }) };
  }

  async progress(channel: string, view: RunView, run: ThreadedRun<D>): Promise<void> {
    const text = this.progressText(view);
    if (run.main && text !== run.shown) {
      try {
        await this.surface.edit(channel, run.main.id, { text }, run.main.at);
      } catch (err) {
        // Someone deleted it: posted anew, as the answer would be, rather than failing at every redraw.
        if (!this.surface.isGone?.(err)) throw err;
        run.main = { id: await this.surface.post(channel, { text }, run.main.at), at: run.main.at };
      }
      run.shown = text;
    }
    if (this.surface.liveDetails) await this.flushDetails(channel, view, run, []);
  }

  /** A file as it comes, where the run answers; a file that cannot be sent is said so there. */
  private async upload(channel: string, view: RunView, f: FileOutcome): Promise<void> {
    const thread = view.files.at(-1)?.replyTo ?? view.replyTo;
    const at = thread ? { thread } : {};
    if ("problem" in f) await this.surface.post(channel, { text: f.problem }, at);
    else await this.surface.upload!(channel, f.file, at);
  }

  async finish(channel: string, view: RunView, state: ThreadedRun<D> | undefined, outcomes: FileOutcome[], parts?: AnswerParts): Promise<string[]> {
    const end = view.end!;
    const d = this.dialect;
    const run = state ?? this.newRun();
    if (end.silent) {
      if (run.main) await this.surface.delete(channel, run.main.id, run.main.at);
      for (const id of run.details.ids()) await this.surface.delete(channel, id, run.detailsAt ?? {});
      return [];
    }
    const { files, problems } = partitionOutcomes(outcomes);
    const activity = activityLines(end.toolActivity, d, end.receiptsUrl);
    const footer = this.surface.detailLimits ? { usage: formatUsage(end.usage, end.durationMs), activity } : undefined;
    let text = answerText(end, d, footer ? problems : [activity.join("\n"), ...problems]);
    if (!text && !files.length) text = `${d.marks.ok} Done (no answer).`;
    const chunks = text ? splitMessage(text, d.limit) : [""];
    const fileGroups = batches(files, { count: this.surface.filesPerMessage ?? 10 });
    // The last piece of text also carries the footer and the first files; more files follow.
    const messages: ThreadMessage<D>[] = chunks.map((t, i) => ({
      text: t,
      ping: true,
      ...(i === chunks.length - 1 && { ...(footer && { footer }), ...(fileGroups.length && { files: fileGroups.shift() }) }),
    }));
    for (const group of fileGroups) messages.push({ text: "", files: group, ping: true });
    const thread = end.replyTo ?? view.replyTo;
    const rest: Placement = thread ? { thread } : {};
    const first: Placement = { ...rest, ...(view.trigger && { replyTo: view.trigger.messageId }) };
    const ids = (parts?.done ?? []).slice(0, messages.length - 1);
    for (const [i, m] of messages.entries()) {
      if (i < ids.length) continue;
      ids.push(await this.send(channel, view, m, ids.length ? rest : first, ids.length ? undefined : run.main));
      if (i < messages.length - 1) await parts?.sent([...ids]);
    }
    // The answer is the run's main message now (the details thread hangs under it).
    if (run.main?.id !== ids[0]) run.main = { id: ids[0]!, at: first };
    const usage = footer ? [] : [usageLine(end.usage, end.durationMs, d) as D];
    await this.flushDetails(channel, { ...view, ...(thread && { replyTo: thread }) }, run, usage);
    return ids;
  }

  /**
   * Posts one message (or edits it into `into`); resolves with its id. A message that is gone is
   * posted anew; files the platform refuses are left out, and the message says so.
   */
  private async send(channel: string, view: RunView, m: ThreadMessage<D>, at: Placement, into?: { id: string; at: Placement }): Promise<string> {
    const go = (msg: ThreadMessage<D>) => (into ? this.surface.edit(channel, into.id, msg, into.at).then(() => into.id) : this.surface.post(channel, msg, at));
    try {
      return await go(m);
    } catch (err) {
      if (into && this.surface.isGone?.(err)) {
        this.log.info({ runId: view.runId }, "progress message is gone; posting the answer as a new message");
        return this.send(channel, view, m, into.at);
      }
      if (!m.files?.length) throw err;
      const { name } = this.surface;
      this.log.warn({ err, runId: view.runId }, `upload refused by ${name}; sending the message without its files`);
      const note = `${this.dialect.marks.file} ${m.files.map((f) => f.filename).join(", ")}: ${name} refused the upload (${(err as Error).message}).`;
      const withNote = m.text ? `${m.text}\n\n${note}` : note;
      const fits = withNote.length <= this.dialect.limit;
      const id = await go({ ...m, text: fits ? withNote : m.text, files: [] });
      if (!fits) await this.surface.post(channel, { text: clip(note, this.dialect.limit) }, into?.at ?? at);
      return id;
    }
  }

  /** A post from another channel: its text in as many messages as it takes, its file after it (or on the last). */
  async post(channel: string, ev: Ev<"post">, outcomes: FileOutcome[]): Promise<string[]> {
    const { files, problems } = partitionOutcomes(outcomes);
    const upload = this.surface.upload?.bind(this.surface);
    const chunks = splitMessage([postText(ev, this.dialect), ...problems].join("\n\n"), this.dialect.limit);
    const ids: string[] = [];
    for (const [i, text] of chunks.entries()) {
      ids.push(await this.surface.post(channel, { text, ping: true, ...(!upload && i === chunks.length - 1 && files.length && { files }) }, {}));
    }
    if (upload) for (const f of files) await upload(channel, f, {});
    return ids;
  }

  /** Allow once / Deny where the run's details are shown now (live), else answering the main message. */
  async prompt(channel: string, view: RunView, run: ThreadedRun<D> | undefined, ev: Ev<"approval_requested">, text: string): Promise<P> {
    const thread = ev.replyTo ?? view.replyTo;
    const here = thread === view.replyTo;
    const at =
      this.surface.liveDetails && here && run ? await this.detailsAt(channel, view, run) : { ...(thread && { thread }), ...(here && run?.main && { replyTo: run.main.id }) };
    return this.surface.prompt(channel, text, ev, at);
  }

  resolvePrompt(channel: string, prompt: P, text: string): Promise<void> {
    return this.surface.closePrompt(channel, prompt, text);
  }

  private newRun(): ThreadedRun<D> {
    const limits = this.surface.detailLimits;
    const details = limits
      ? new DetailMessages<D, ThreadMessage<D>>(limits, (group) => ({ text: "", details: group }))
      : new DetailMessages<D, ThreadMessage<D>>(this.dialect.limit, (text) => ({ text }));
    return { reflected: 0, details };
  }

  /** Where the details go: the run's thread, else a thread under its main message, else after it. */
  private async detailsAt(channel: string, view: RunView, run: ThreadedRun<D>): Promise<Placement> {
    if (run.detailsAt) return run.detailsAt;
    let thread = view.replyTo;
    if (!thread && run.main) {
      const name = `Details: ${firstLine(view.trigger?.text ?? "") || "mom's run"}`;
      const { id, at } = run.main;
      thread = !this.surface.thread
        ? id
        : await this.surface.thread(channel, id, at, name).catch((err: unknown) => {
            this.log.warn({ err, runId: view.runId }, "could not start a details thread; posting the details as follow-ups");
            return undefined;
          });
    }
    run.detailsAt = thread ? { thread } : {};
    return run.detailsAt;
  }

  /** The run's new details (and `extra` ones) into its thread, in as few messages as fit. */
  private async flushDetails(channel: string, view: RunView, run: ThreadedRun<D>, extra: D[]): Promise<void> {
    const steps = view.steps.slice(run.reflected).map((s) => (this.surface.detail ? this.surface.detail(s) : (detailText(s, this.dialect) as D)));
    const fresh = [...steps.filter((x): x is D => x !== undefined), ...extra];
    run.reflected = view.steps.length;
    if (!fresh.length) return;
    const at = await this.detailsAt(channel, view, run);
    run.details.add(fresh);
    await run.details.flush(
      (m) => this.surface.post(channel, m, at),
      (id, m) => this.surface.edit(channel, id, m, at),
      (err) => this.surface.isGone?.(err) ?? false,
    );
  }
}

/** A Placement as JSON brings it back: optional string fields only. */
function isPlacement(at: unknown): at is Placement {
  if (!at || typeof at !== "object" || Array.isArray(at)) return false;
  return Object.entries(at).every(([k, v]) => ["thread", "replyTo", "replyToUser"].includes(k) && typeof v === "string");
}
