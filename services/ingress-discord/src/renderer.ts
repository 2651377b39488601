import { formatDuration, formatUsage, splitMessage } from "@mom/ingress-sdk";
import { activityLines, answerText, clip, type Dialect, type Ev, fenceSafe, type FileOutcome, firstLine, type Layout, progressText, type RunView, type ToolStep, toolSteps, UNICODE_MARKS } from "@mom/ingress-sdk";
import type { APIEmbed } from "discord.js";
import type { Logger } from "pino";
import type { DiscordApi, OutFile } from "./discord-api.js";
import { DISCORD_MESSAGE_LIMIT } from "./discord-options.js";
import { idsForMentions } from "./mentions.js";

export interface RendererDeps {
  api: DiscordApi;
  /** Discord user id of a username mom wrote as `@username`. */
  idOf(username: string): string | undefined;
  /** The Discord channel (thread) a message we published came from, so queue notices land next to it. */
  channelOfMessage(messageId: string): string | undefined;
  log: Logger;
}

/** Where an approval prompt is. */
export interface DiscordPrompt {
  messageChannelId: string;
  messageId: string;
}

/** Button custom ids: `mom-approval:allow:<approvalId>` / `mom-approval:deny:<approvalId>`. */
export const APPROVAL_PREFIX = "mom-approval:";

/** `mom-approval:allow:<id>` -> the decision and approval id; undefined for other buttons. */
export function parseApprovalButton(customId: string): { decision: "allow-once" | "deny"; approvalId: string } | undefined {
  const m = /^mom-approval:(allow|deny):(.+)$/.exec(customId);
  return m ? { decision: m[1] === "allow" ? "allow-once" : "deny", approvalId: m[2]! } : undefined;
}

/** Discord's error code for a message that does not exist (any more). */
const UNKNOWN_MESSAGE = 10008;
const GREEN = 0x2ecc71;
const RED = 0xe74c3c;
const GREY = 0x95a5a6;
/** Embeds per message and characters over all of them (Discord's limits). */
const EMBEDS_PER_MESSAGE = 10;
const EMBED_CHARS_PER_MESSAGE = 6000;
const FILES_PER_MESSAGE = 10;




/** A finished tool call as an embed: label, tool and duration, arguments, the start of the result. */
export function toolEmbed(t: ToolStep): APIEmbed {
  const fields: NonNullable<APIEmbed["fields"]> = [{ name: "Tool", value: clip(`${t.toolName} · ${formatDuration(t.durationMs)}`, 1024), inline: true }];
  if (t.args !== undefined) {
    const json = JSON.stringify(t.args, null, 1) ?? "";
    fields.push({ name: "Arguments", value: `\`\`\`json\n${fenceSafe(clip(json, 400))}\n\`\`\`` });
  }
  const result = t.resultText.trim();
  return {
    title: clip(`${t.isError ? "✗" : "✓"} ${t.label}`, 256),
    color: t.isError ? RED : GREEN,
    ...(result && { description: `\`\`\`\n${fenceSafe(clip(result, 700))}\n\`\`\`` }),
    fields,
  };
}

function embedChars(e: APIEmbed): number {
  let c = (e.title ?? "").length + (e.description ?? "").length + (e.footer?.text ?? "").length;
  for (const f of e.fields ?? []) c += f.name.length + f.value.length;
  return c;
}

/** Groups embeds into messages within Discord's per-message limits. */
export function batchEmbeds(embeds: APIEmbed[]): APIEmbed[][] {
  const out: APIEmbed[][] = [];
  let cur: APIEmbed[] = [];
  let chars = 0;
  for (const e of embeds) {
    const c = embedChars(e);
    if (cur.length && (cur.length >= EMBEDS_PER_MESSAGE || chars + c > EMBED_CHARS_PER_MESSAGE)) {
      out.push(cur);
      cur = [];
      chars = 0;
    }
    cur.push(e);
    chars += c;
  }
  if (cur.length) out.push(cur);
  return out;
}


/** Discord's Markdown; `@username` mentions become `<@id>`. */
export function discordDialect(idOf: (username: string) => string | undefined): Dialect {
  return {
    limit: DISCORD_MESSAGE_LIMIT,
    escape: (t) => t,
    bold: (t) => `**${t}**`,
    italic: (t) => `*${t}*`,
    code: (t) => `\`${t}\``,
    codeBlock: (t) => `\`\`\`\n${fenceSafe(t)}\n\`\`\``,
    mention: (id) => `<@${id}>`,
    fromMarkdown: (md) => idsForMentions(md, idOf),
    marks: UNICODE_MARKS,
  };
}

/** What Discord shows of one run. */
interface DiscordRun {
  /** Where the run's messages go: the thread the trigger was in, else the channel. */
  target: string;
  mainId?: string;
  shown?: string;
}

/**
 * A run in Discord (see docs/discord.md, "How mom answers"):
 *
 * - A **main message** per run, a reply to the message that triggered it: "Working…", one line
 *   per finished step and `→ label` for the running one; at the end it becomes the answer (the
 *   first 2,000-character piece; more pieces follow as messages), with the files the agent
 *   attached and a usage embed on the last.
 * - **Tool details** (arguments, result, duration) as embeds when the run ends: in a thread on
 *   the main message in server text channels, else (DMs, threads: Discord has no threads there)
 *   as follow-up messages after the answer.
 * - The typing indicator is renewed while the run is active. Silent runs leave no trace.
 */
export class DiscordLayout implements Layout<DiscordRun, DiscordPrompt> {
  readonly dialect: Dialect;
  /** Trigger message id -> "queued" notice, reused as the main message when its run starts. */
  private readonly queuedNotices = new Map<string, { channelId: string; messageId: string }>();

  constructor(private readonly deps: RendererDeps) {
    this.dialect = discordDialect((u) => deps.idOf(u));
  }

  private target(channel: string, view: RunView): string {
    return view.replyTo ?? channel;
  }

  async queued(channel: string, ev: Ev<"run_queued">): Promise<void> {
    const target = this.deps.channelOfMessage(ev.trigger.messageId) ?? channel;
    const content = `⏳ Queued: I'll get to this after the current request (position ${ev.position}).`;
    const existing = this.queuedNotices.get(ev.trigger.messageId);
    if (existing) return this.deps.api.edit(existing.channelId, existing.messageId, { content });
    const messageId = await this.deps.api.send(target, { content, replyTo: ev.trigger.messageId });
    this.queuedNotices.set(ev.trigger.messageId, { channelId: target, messageId });
  }

  async rejected(channel: string, ev: Ev<"run_rejected">): Promise<void> {
    const target = ev.replyTo ?? this.deps.channelOfMessage(ev.trigger.messageId) ?? channel;
    await this.deps.api.send(target, { content: clip(this.dialect.fromMarkdown(ev.text), DISCORD_MESSAGE_LIMIT), replyTo: ev.trigger.messageId });
  }

  async open(channel: string, view: RunView): Promise<DiscordRun> {
    const run: DiscordRun = { target: this.target(channel, view) };
    const trigger = view.trigger!.messageId;
    const notice = this.queuedNotices.get(trigger);
    this.queuedNotices.delete(trigger);
    run.shown = progressText(view, this.dialect);
    if (notice && notice.channelId === run.target) {
      run.mainId = notice.messageId;
      await this.deps.api.edit(run.target, run.mainId, { content: run.shown });
    } else {
      if (notice) await this.deps.api.remove(notice.channelId, notice.messageId).catch(() => {});
      run.mainId = await this.deps.api.send(run.target, { content: run.shown, replyTo: trigger });
    }
    return run;
  }

  async progress(_channel: string, view: RunView, run: DiscordRun): Promise<void> {
    const text = progressText(view, this.dialect);
    if (!run.mainId || text === run.shown) return;
    run.shown = text;
    await this.deps.api.edit(run.target, run.mainId, { content: text });
  }

  async typing(channel: string, view: RunView): Promise<void> {
    await this.deps.api.typing(this.target(channel, view));
  }

  /** A tool call waits for a person: a message with Allow once / Deny buttons that pings the approvers. */
  async prompt(channel: string, view: RunView, run: DiscordRun | undefined, ev: Ev<"approval_requested">, text: string): Promise<DiscordPrompt> {
    const runTarget = run?.target ?? this.target(channel, view);
    const target = ev.replyTo ?? runTarget;
    const components = [
      {
        type: 1,
        components: [
          { type: 2, style: 3, label: "Allow once", custom_id: `${APPROVAL_PREFIX}allow:${ev.approvalId}` },
          { type: 2, style: 4, label: "Deny", custom_id: `${APPROVAL_PREFIX}deny:${ev.approvalId}` },
        ],
      },
    ];
    const content = clip(text, DISCORD_MESSAGE_LIMIT);
    const messageId = await this.deps.api.send(target, { content, components, pingUsers: ev.approvers, ...(run?.mainId && target === runTarget && { replyTo: run.mainId }) });
    return { messageChannelId: target, messageId };
  }

  async resolvePrompt(_channel: string, p: DiscordPrompt, text: string): Promise<void> {
    await this.deps.api.edit(p.messageChannelId, p.messageId, { content: clip(text, DISCORD_MESSAGE_LIMIT), components: [] });
  }

  deadline(expiresAt: string): string {
    return `<t:${Math.floor(Date.parse(expiresAt) / 1000)}:R>`;
  }

  async finish(channel: string, view: RunView, state: DiscordRun | undefined, outcomes: FileOutcome[]): Promise<string[]> {
    const end = view.end!;
    const run: DiscordRun = state ?? { target: this.target(channel, view) };
    const { api } = this.deps;
    if (end.silent) {
      if (run.mainId) await api.remove(run.target, run.mainId);
      return [];
    }
    const files: OutFile[] = [];
    const problems: string[] = [];
    for (const o of outcomes) {
      if ("problem" in o) problems.push(o.problem);
      else files.push({ name: o.file.filename, data: o.file.bytes, ...(o.file.mimeType && { contentType: o.file.mimeType }) });
    }
    let text = answerText(end, this.dialect, problems);
    if (!text && !files.length) text = "✓ Done (no answer).";
    const chunks = text ? splitMessage(text, DISCORD_MESSAGE_LIMIT) : [""];
    const usage: APIEmbed = { color: GREY, footer: { text: formatUsage(end.usage, end.durationMs) } };
    const activity = activityLines(end.toolActivity, this.dialect);
    if (activity.length) usage.description = clip(activity.join("\n"), 4000);
    const fileGroups: OutFile[][] = [];
    for (let i = 0; i < files.length; i += FILES_PER_MESSAGE) fileGroups.push(files.slice(i, i + FILES_PER_MESSAGE));
    // One message per chunk; the last one also carries the usage and the first group of files.
    const messages = chunks.map((content, i) => ({
      content,
      ...(i === chunks.length - 1 && { embeds: [usage], files: fileGroups.shift() ?? [] }),
    }));
    for (const group of fileGroups) messages.push({ content: "", files: group });
    const triggerId = view.trigger?.messageId;
    let first = true;
    const ids: string[] = [];
    for (const m of messages) {
      const out = { ...m, pingUsers: true };
      if (first && run.mainId) ids.push(await this.deliver(run, view, out, run.mainId));
      else ids.push(await this.deliver(run, view, { ...out, ...(first && triggerId && { replyTo: triggerId }) }));
      first = false;
    }
    const tools = toolSteps(view);
    if (tools.length) await this.postDetails(run, view, tools);
    return ids;
  }

  /**
   * Sends (or edits into `editId`) one message and resolves with its id; when its files are refused
   * (too large), sends it without them and says so.
   */
  private async deliver(run: DiscordRun, view: RunView, m: { content: string; embeds?: APIEmbed[]; files?: OutFile[]; pingUsers: boolean; replyTo?: string }, editId?: string): Promise<string> {
    const { api } = this.deps;
    const go = (msg: typeof m) => (editId ? api.edit(run.target, editId, msg).then(() => editId) : api.send(run.target, msg));
    try {
      return await go(m);
    } catch (err) {
      // Someone deleted the progress message: the answer is posted anew instead of being lost.
      if (editId && (err as { code?: unknown }).code === UNKNOWN_MESSAGE) {
        this.deps.log.info({ runId: view.runId }, "progress message is gone; posting the answer as a new message");
        return this.deliver(run, view, { ...m, ...(view.trigger && { replyTo: view.trigger.messageId }) });
      }
      if (!m.files?.length) throw err;
      this.deps.log.warn({ err, runId: view.runId }, "upload refused by Discord; sending the message without its files");
      const note = `📎 ${m.files.map((f) => f.name).join(", ")}: Discord refused the upload (${(err as Error).message}).`;
      const content = m.content ? `${m.content}\n\n${note}` : note;
      const text = content.length > DISCORD_MESSAGE_LIMIT ? m.content : content;
      const id = await go({ ...m, content: text, files: [] });
      if (text === m.content) await api.send(run.target, { content: clip(note, DISCORD_MESSAGE_LIMIT) });
      return id;
    }
  }

  /** Tool details: a thread on the main message where Discord allows one, else follow-up messages. */
  private async postDetails(run: DiscordRun, view: RunView, tools: ToolStep[]): Promise<void> {
    const { api } = this.deps;
    let where = run.target;
    if (run.mainId && (await api.threadable(run.target))) {
      const name = clip(`Details: ${firstLine(view.trigger?.text ?? "") || "mom's run"}`, 100);
      try {
        where = await api.startThread(run.target, run.mainId, name);
      } catch (err) {
        this.deps.log.warn({ err, runId: view.runId }, "could not start a details thread; posting the details as follow-ups");
      }
    }
    for (const embeds of batchEmbeds(tools.map(toolEmbed))) await api.send(where, { embeds });
  }
}
