import { escapeMrkdwn, splitMessage } from "@mom/ingress-sdk";
import {
  activityLines,
  answerText,
  approvalPromptParts,
  type Dialect,
  describeArgs,
  type Ev,
  fenceSafe,
  type FileOutcome,
  type Layout,
  type RunView,
  type Step,
  statusText,
  stepLine,
  clip,
  usageLine,
} from "@mom/ingress-sdk";
import type { Logger } from "pino";
import { formatDuration } from "@mom/ingress-sdk";
import { isSlackTs } from "./slack-inbound.js";

/** What the renderer needs of Slack (the Web API client implements it; tests may fake it). */
export interface SlackPoster {
  /** chat.postMessage (with Block Kit blocks when given; `text` is then the notification fallback); resolves with the new message's ts. */
  post(channel: string, text: string, threadTs?: string, blocks?: SlackBlock[]): Promise<string>;
  update(channel: string, ts: string, text: string, blocks?: SlackBlock[]): Promise<void>;
  delete(channel: string, ts: string): Promise<void>;
  /** files.uploadV2 into the channel (in the thread when threadTs is given). */
  upload(channel: string, file: { filename: string; title: string; bytes: Uint8Array }, threadTs?: string): Promise<void>;
  react(channel: string, ts: string, name: string, add: boolean): Promise<void>;
}

/** A Block Kit block, as JSON. */
export type SlackBlock = Record<string, unknown>;

/** Where an approval prompt is, for the button handler's private answer, and its sections. */
export interface SlackPrompt {
  ts: string;
  threadTs?: string;
  /** The prompt's text blocks (without the buttons), kept when the outcome is added. */
  sections?: SlackBlock[];
}

/** Characters in the text of one section block. */
export const SLACK_SECTION_LIMIT = 3000;

const section = (text: string): SlackBlock => ({ type: "section", text: { type: "mrkdwn", text: clip(text, SLACK_SECTION_LIMIT) } });

/**
 * `text` in code blocks of at most SLACK_SECTION_LIMIT characters each, escapes included, cut
 * at line breaks where it can (a line longer than a section goes on in the next block); nothing
 * is dropped or clipped.
 */
export function codeSections(text: string, d: Dialect, limit = SLACK_SECTION_LIMIT): string[] {
  const fits = (t: string) => d.codeBlock(t).length <= limit;
  if (fits(text)) return [d.codeBlock(text)];
  const out: string[] = [];
  let cur = "";
  const push = () => {
    if (cur) out.push(d.codeBlock(cur));
    cur = "";
  };
  for (const line of text.split("\n")) {
    const joined = cur ? `${cur}\n${line}` : line;
    if (fits(joined)) {
      cur = joined;
      continue;
    }
    push();
    if (fits(line)) {
      cur = line;
      continue;
    }
    for (const ch of line) {
      if (!fits(cur + ch)) push();
      cur += ch;
    }
  }
  push();
  return out;
}

export const APPROVAL_ALLOW = "mom_approval_allow";
export const APPROVAL_DENY = "mom_approval_deny";

export interface SlackLayoutDeps {
  api: SlackPoster;
  /** Markdown -> mrkdwn, `@username` -> `<@U…>`. */
  toMrkdwn: (markdown: string) => string;
  log: Logger;
  messageLimit: number;
}

/** Slack's mrkdwn, with emoji shortcodes for the marks. */
export function slackDialect(limit: number, toMrkdwn: (markdown: string) => string): Dialect {
  return {
    limit,
    escape: escapeMrkdwn,
    bold: (t) => `*${t}*`,
    italic: (t) => `_${t}_`,
    code: (t) => `\`${escapeMrkdwn(t)}\``,
    codeBlock: (t) => "```\n" + (fenceSafe(escapeMrkdwn(t.trimEnd())) || " ") + "\n```",
    mention: (id) => `<@${id}>`,
    fromMarkdown: toMrkdwn,
    marks: {
      working: ":hourglass_flowing_sand:",
      ok: ":white_check_mark:",
      failed: ":x:",
      denied: ":no_entry_sign:",
      pending: ":hourglass:",
      stopped: ":black_square_for_stop:",
      warning: ":warning:",
      retry: ":repeat:",
      approval: ":closed_lock_with_key:",
      expired: ":hourglass:",
      usage: ":bar_chart:",
      file: ":paperclip:",
    },
  };
}

interface DetailMessage {
  ts?: string;
  text: string;
  dirty: boolean;
}

/** What Slack shows of one run: the main message and the thread messages its details fill. */
interface SlackRun {
  mainTs?: string;
  shownStatus?: string;
  /** Steps already in `detailMessages`. */
  reflected: number;
  detailMessages: DetailMessage[];
}

const QUEUED_REACTION = "hourglass_flowing_sand";

/**
 * A run in Slack: one main message (`⏳ working…`, `⏳ → label`) that becomes the answer (split
 * over several messages when long); finished tool calls (args, duration, result), retries and the
 * usage line go into the thread under it, gathered into as few messages as fit; files are
 * uploaded into the thread as they come; a queued trigger gets a reaction. The web API client
 * waits out a 429's Retry-After and retries, so nothing is lost.
 */
export class SlackLayout implements Layout<SlackRun, SlackPrompt> {
  readonly dialect: Dialect;
  private readonly queuedReactions = new Set<string>();

  constructor(private readonly deps: SlackLayoutDeps) {
    this.dialect = slackDialect(deps.messageLimit, deps.toMrkdwn);
  }

  private status(view: RunView): string {
    return `${this.dialect.marks.working} ${escapeMrkdwn(statusText(view.activity))}`;
  }

  async open(channel: string, view: RunView): Promise<SlackRun> {
    const trigger = view.trigger?.messageId;
    if (trigger && isSlackTs(trigger) && this.queuedReactions.delete(`${channel}:${trigger}`)) {
      await this.deps.api.react(channel, trigger, QUEUED_REACTION, false).catch((err) => this.deps.log.warn({ err, channel }, "could not remove the queued reaction"));
    }
    const status = this.status(view);
    return { mainTs: await this.deps.api.post(channel, status, view.replyTo), shownStatus: status, reflected: 0, detailMessages: [] };
  }

  async progress(channel: string, view: RunView, run: SlackRun): Promise<void> {
    const status = this.status(view);
    if (run.mainTs && status !== run.shownStatus) {
      await this.deps.api.update(channel, run.mainTs, status);
      run.shownStatus = status;
    }
    await this.flushDetails(channel, view, run, []);
  }

  async file(channel: string, view: RunView, _run: SlackRun | undefined, f: FileOutcome): Promise<void> {
    const ev = view.files.at(-1);
    const thread = ev?.replyTo ?? view.replyTo;
    if ("problem" in f) await this.deps.api.post(channel, f.problem, thread);
    else await this.deps.api.upload(channel, { filename: f.file.filename, title: f.file.title, bytes: f.file.bytes }, thread);
  }

  async finish(channel: string, view: RunView, run: SlackRun | undefined, _files: FileOutcome[]): Promise<string[]> {
    const { api } = this.deps;
    const end = view.end!;
    const replyTo = end.replyTo ?? view.replyTo;
    if (end.silent) {
      if (run?.mainTs) await api.delete(channel, run.mainTs);
      for (const m of run?.detailMessages ?? []) if (m.ts) await api.delete(channel, m.ts);
      return [];
    }
    const body = answerText(end, this.dialect, [activityLines(end.toolActivity, this.dialect).join("\n")]) || "_Done._";
    const [first = "", ...rest] = splitMessage(body, this.deps.messageLimit);
    const shown: SlackRun = run ?? { reflected: 0, detailMessages: [] };
    if (shown.mainTs) await api.update(channel, shown.mainTs, first);
    else shown.mainTs = await api.post(channel, first, replyTo);
    const ids = [shown.mainTs];
    for (const chunk of rest) ids.push(await api.post(channel, chunk, replyTo));
    await this.flushDetails(channel, { ...view, ...(replyTo && { replyTo }) }, shown, [usageLine(end.usage, end.durationMs, this.dialect)]);
    return ids;
  }

  async queued(channel: string, ev: Ev<"run_queued">): Promise<void> {
    const ts = ev.trigger.messageId;
    if (!isSlackTs(ts)) return;
    await this.deps.api.react(channel, ts, QUEUED_REACTION, true);
    this.queuedReactions.add(`${channel}:${ts}`);
  }

  async rejected(channel: string, ev: Ev<"run_rejected">): Promise<void> {
    await this.deps.api.post(channel, `<@${ev.trigger.senderId}> ${this.deps.toMrkdwn(ev.text)}`, ev.replyTo);
  }

  /** Allow once / Deny buttons in the run's thread. */
  async prompt(channel: string, view: RunView, run: SlackRun | undefined, ev: Ev<"approval_requested">, text: string): Promise<SlackPrompt> {
    const thread = ev.replyTo ?? view.replyTo ?? run?.mainTs;
    // The arguments can be longer than one section: they are spread over several, never clipped.
    const p = approvalPromptParts(ev, this.dialect, this.deadline.bind(this));
    const sections = [p.head, ...codeSections(p.args, this.dialect), p.foot].map(section);
    const blocks: SlackBlock[] = [
      ...sections,
      {
        type: "actions",
        block_id: `mom_approval:${ev.approvalId}`.slice(0, 255),
        elements: [
          { type: "button", text: { type: "plain_text", text: "Allow once" }, style: "primary", action_id: APPROVAL_ALLOW, value: ev.approvalId },
          { type: "button", text: { type: "plain_text", text: "Deny" }, style: "danger", action_id: APPROVAL_DENY, value: ev.approvalId },
        ],
      },
    ];
    const ts = await this.deps.api.post(channel, text, thread, blocks);
    return { ts, ...(thread && { threadTs: thread }), sections };
  }

  async resolvePrompt(channel: string, prompt: SlackPrompt, text: string): Promise<void> {
    const outcome = text.slice(text.lastIndexOf("\n") + 1);
    await this.deps.api.update(channel, prompt.ts, text, prompt.sections ? [...prompt.sections, section(outcome)] : [section(text)]);
  }

  deadline(expiresAt: string): string {
    return `by <!date^${Math.floor(Date.parse(expiresAt) / 1000)}^{time}|${expiresAt.slice(11, 16)} UTC>`;
  }

  private detail(step: Step): string {
    if (step.kind !== "tool") return stepLine(step, this.dialect);
    const d = this.dialect;
    const head = `${step.isError ? d.marks.failed : d.marks.ok} ${d.bold(escapeMrkdwn(clip(step.label, 200)))} · ${d.code(step.toolName)} · ${formatDuration(step.durationMs)}`;
    const parts = [head];
    const args = describeArgs(step.args);
    if (args) parts.push(d.codeBlock(clip(args, 400)));
    if (step.resultText.trim()) parts.push(d.codeBlock(clip(step.resultText.trimEnd(), 900)));
    return parts.join("\n");
  }

  /** Appends new details to the last thread message while it has room, else starts another. */
  private async flushDetails(channel: string, view: RunView, run: SlackRun, extra: string[]): Promise<void> {
    const thread = view.replyTo ?? run.mainTs;
    const fresh = [...view.steps.slice(run.reflected).map((s) => this.detail(s)), ...extra];
    if (!thread || !fresh.length) return;
    const limit = this.deps.messageLimit;
    for (const detail of fresh) {
      const piece = clip(detail, limit);
      const last = run.detailMessages.at(-1);
      if (last && last.text.length + 2 + piece.length <= limit) {
        last.text += `\n\n${piece}`;
        last.dirty = true;
      } else run.detailMessages.push({ text: piece, dirty: true });
    }
    run.reflected = view.steps.length;
    for (const m of run.detailMessages) {
      if (!m.dirty) continue;
      if (m.ts) await this.deps.api.update(channel, m.ts, m.text);
      else m.ts = await this.deps.api.post(channel, m.text, thread);
      m.dirty = false;
    }
  }
}
