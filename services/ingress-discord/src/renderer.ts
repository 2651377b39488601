import type { ChannelRef, OutboundEvent, OutboundEventBody } from "@mom/contracts";
import { formatDuration, formatUsage, splitMessage } from "@mom/format";
import type { APIEmbed } from "discord.js";
import type { Logger } from "pino";
import type { DiscordApi, OutFile } from "./discord-api.js";
import { DISCORD_MESSAGE_LIMIT } from "./discord-options.js";
import { idsForMentions } from "./mentions.js";

type Ev<T extends OutboundEventBody["type"]> = Extract<OutboundEventBody, { type: T }>;

export interface RendererDeps {
  api: DiscordApi;
  /** The bytes of an outbound file (the bus's files bucket); undefined when the object is gone. */
  getFile(objectKey: string, opts: { maxBytes: number }): Promise<Uint8Array | undefined>;
  /** Discord user id of a username mom wrote as `@username`. */
  idOf(username: string): string | undefined;
  /** The Discord channel (thread) a message we published came from, so queue notices land next to it. */
  channelOfMessage(messageId: string): string | undefined;
  maxBytes: number;
  editIntervalMs: number;
  typingIntervalMs: number;
  log: Logger;
}

interface ToolDetail {
  label: string;
  toolName: string;
  args?: unknown;
  isError: boolean;
  resultText: string;
  durationMs: number;
}

interface RunView {
  runId: string;
  /** Where the run's messages go: the thread the trigger was in, else the channel. */
  target: string;
  triggerId?: string;
  triggerText?: string;
  mainId?: string;
  lastSeq: number;
  /** Finished steps, shown in the progress message. */
  steps: string[];
  status: string;
  tools: ToolDetail[];
  args: Map<string, unknown>;
  files: Array<Ev<"attachment">>;
  dirty: boolean;
  lastEditAt: number;
  editTimer?: NodeJS.Timeout;
  typingTimer?: NodeJS.Timeout;
  typingUntil: number;
}

/** A prompt with buttons waiting for an approver. */
export interface PendingApproval {
  /** The conversation's channel (the bus channel: a thread's parent). */
  channelId: string;
  /** Where the prompt message is (the channel or the thread). */
  messageChannelId: string;
  messageId: string;
  content: string;
  approvers: string[];
}

/** Button custom ids: `mom-approval:allow:<approvalId>` / `mom-approval:deny:<approvalId>`. */
export const APPROVAL_PREFIX = "mom-approval:";

/** `mom-approval:allow:<id>` -> the decision and approval id; undefined for other buttons. */
export function parseApprovalButton(customId: string): { decision: "allow-once" | "deny"; approvalId: string } | undefined {
  const m = /^mom-approval:(allow|deny):(.+)$/.exec(customId);
  return m ? { decision: m[1] === "allow" ? "allow-once" : "deny", approvalId: m[2]! } : undefined;
}

const WORKING = "⏳ Working…";
/** Discord's error code for a message that does not exist (any more). */
const UNKNOWN_MESSAGE = 10008;
const MAX_STEPS_SHOWN = 12;
const TYPING_MAX_MS = 60 * 60_000;
const GREEN = 0x2ecc71;
const RED = 0xe74c3c;
const GREY = 0x95a5a6;
/** Embeds per message and characters over all of them (Discord's limits). */
const EMBEDS_PER_MESSAGE = 10;
const EMBED_CHARS_PER_MESSAGE = 6000;
const FILES_PER_MESSAGE = 10;

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
/** Keeps text from closing the code fence it is shown in. */
const fenceSafe = (s: string) => s.replace(/```/g, "``\u200b`");
const oneLine = (s: string) => s.trim().split("\n")[0] ?? "";



/** A finished tool call as an embed: label, tool and duration, arguments, the start of the result. */
export function toolEmbed(t: ToolDetail): APIEmbed {
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

/**
 * Draws one adapter's outbound events in Discord (see docs/discord.md, "How mom answers"):
 *
 * - A **main message** per run, a reply to the message that triggered it: "Working…", one line
 *   per finished step and `→ label` for the running one, edited at most once per
 *   `editIntervalMs`; at the end it becomes the answer (the first 2,000-character piece; more
 *   pieces follow as messages), with the files the agent attached and a usage embed on the last.
 * - **Tool details** (arguments, result, duration) as embeds when the run ends: in a thread on
 *   the main message in server text channels, else (DMs, threads: Discord has no threads there)
 *   as follow-up messages after the answer.
 * - The typing indicator is renewed while the run is active. Silent runs leave no trace.
 *
 * Events of one channel are applied strictly in order (callers serialise per channel; the
 * renderer's own timers go through `enqueue`). Duplicates (same run, seq not higher) are dropped.
 */
export class DiscordRenderer {
  private readonly runs = new Map<string, RunView>();
  private readonly ended = new Set<string>();
  /** Trigger message id -> "queued" notice, reused as the main message when its run starts. */
  private readonly queuedNotices = new Map<string, { channelId: string; messageId: string }>();
  private readonly tails = new Map<string, Promise<void>>();
  private readonly approvals = new Map<string, PendingApproval>();

  constructor(private readonly deps: RendererDeps) {}

  /** Applies one event after the earlier ones of its channel; resolves when it is applied. */
  handle(ref: ChannelRef, e: OutboundEvent): Promise<void> {
    return this.enqueue(ref.channelId, () => this.apply(ref, e));
  }

  /** Stops timers (typing, pending edits). */
  close(): void {
    for (const run of this.runs.values()) this.stopTimers(run);
  }

  private enqueue(key: string, fn: () => Promise<void>): Promise<void> {
    const run = (this.tails.get(key) ?? Promise.resolve()).then(fn).catch((err: unknown) => this.deps.log.error({ err, channel: key }, "discord rendering failed"));
    this.tails.set(key, run);
    void run.then(() => {
      if (this.tails.get(key) === run) this.tails.delete(key);
    });
    return run;
  }

  private async apply(ref: ChannelRef, e: OutboundEvent): Promise<void> {
    if (this.ended.has(e.runId)) return;
    const known = this.runs.get(e.runId);
    if (known && e.seq <= known.lastSeq) return;
    const ev = e.event;
    switch (ev.type) {
      case "run_queued":
        return this.queued(ref, ev);
      case "run_rejected": {
        const target = ev.replyTo ?? this.deps.channelOfMessage(ev.trigger.messageId) ?? ref.channelId;
        await this.deps.api.send(target, { content: clip(this.mentions(ev.text), DISCORD_MESSAGE_LIMIT), replyTo: ev.trigger.messageId });
        return;
      }
      case "run_started":
        return this.started(ref, e.runId, e.seq, ev);
      case "run_ended": {
        const run = this.view(ref, e.runId, e.seq);
        return this.finish(run, ev);
      }
      case "approval_requested":
        return this.approvalRequested(ref, this.view(ref, e.runId, e.seq), ev);
      case "approval_resolved":
        return this.approvalResolved(ref, this.view(ref, e.runId, e.seq), ev);
      default:
        break;
    }
    const run = this.view(ref, e.runId, e.seq);
    switch (ev.type) {
      case "tool_execution_start":
        run.args.set(ev.toolCallId, ev.args);
        this.setStatus(ref, run, `→ ${clip(ev.label, 120)}`);
        break;
      case "tool_execution_end":
        run.tools.push({ label: ev.label, toolName: ev.toolName, args: run.args.get(ev.toolCallId), isError: ev.isError, resultText: ev.resultText, durationMs: ev.durationMs });
        run.args.delete(ev.toolCallId);
        run.steps.push(`${ev.isError ? "✗" : "✓"} ${clip(ev.label, 120)} (${formatDuration(ev.durationMs)})${ev.isError ? `: ${clip(oneLine(ev.resultText), 120)}` : ""}`);
        this.setStatus(ref, run, "");
        break;
      case "compaction_start":
        this.setStatus(ref, run, "→ compacting the context…");
        break;
      case "compaction_end":
        if (ev.errorMessage) run.steps.push(`✗ compaction failed: ${clip(oneLine(ev.errorMessage), 200)}`);
        this.setStatus(ref, run, "");
        break;
      case "auto_retry_start":
        run.steps.push(`↻ provider error, retry ${ev.attempt}/${ev.maxAttempts} in ${Math.round(ev.delayMs / 1000)}s: ${clip(oneLine(ev.errorMessage), 200)}`);
        this.setStatus(ref, run, run.status);
        break;
      case "attachment":
        run.files.push(ev);
        break;
      default:
        break;
    }
  }

  /** An approver's view of a pending approval (for the button handler). */
  approval(approvalId: string): PendingApproval | undefined {
    return this.approvals.get(approvalId);
  }

  /** A tool call waits for a person: a message with Allow once / Deny buttons that pings the approvers. */
  private async approvalRequested(ref: ChannelRef, run: RunView, ev: Ev<"approval_requested">): Promise<void> {
    const target = ev.replyTo ?? run.target;
    const who = ev.approvers.length ? ev.approvers.map((id) => `<@${id}>`).join(", ") : "nobody is configured (adapters.<name>.admins)";
    const expires = Math.floor(Date.parse(ev.expiresAt) / 1000);
    const content = clip(
      [
        `🔐 **Approval needed**: mom wants to run \`${ev.toolId}\` (${ev.risk}), asked by @${ev.requestedBy.username}`,
        `\`\`\`\n${fenceSafe(clip(ev.argsSummary, 1200))}\n\`\`\``,
        `Who can decide: ${who}${Number.isFinite(expires) ? ` · no decision <t:${expires}:R> means deny` : ""}`,
      ].join("\n"),
      DISCORD_MESSAGE_LIMIT,
    );
    const components = [
      {
        type: 1,
        components: [
          { type: 2, style: 3, label: "Allow once", custom_id: `${APPROVAL_PREFIX}allow:${ev.approvalId}` },
          { type: 2, style: 4, label: "Deny", custom_id: `${APPROVAL_PREFIX}deny:${ev.approvalId}` },
        ],
      },
    ];
    const messageId = await this.deps.api.send(target, { content: this.mentions(content), components, pingUsers: true, ...(run.mainId && target === run.target && { replyTo: run.mainId }) });
    this.approvals.set(ev.approvalId, { channelId: ref.channelId, messageChannelId: target, messageId, content, approvers: ev.approvers });
    this.setStatus(ref, run, `⏸ waiting for approval to run \`${ev.toolId}\``);
  }

  private async approvalResolved(ref: ChannelRef, run: RunView, ev: Ev<"approval_resolved">): Promise<void> {
    const a = this.approvals.get(ev.approvalId);
    this.approvals.delete(ev.approvalId);
    this.setStatus(ref, run, "");
    if (!a) return;
    const by = ev.decidedBy ? ` by ${ev.decidedBy}` : "";
    const line = { approved: `✓ Allowed once${by}.`, denied: `⊘ Denied${by}.`, expired: "⌛ No decision in time: denied." }[ev.outcome];
    await this.deps.api.edit(a.messageChannelId, a.messageId, { content: this.mentions(clip(`${a.content}\n${line}`, DISCORD_MESSAGE_LIMIT)), components: [] });
  }

  private async queued(ref: ChannelRef, ev: Ev<"run_queued">): Promise<void> {
    const target = this.deps.channelOfMessage(ev.trigger.messageId) ?? ref.channelId;
    const content = `⏳ Queued: I'll get to this after the current request (position ${ev.position}).`;
    const existing = this.queuedNotices.get(ev.trigger.messageId);
    if (existing) return this.deps.api.edit(existing.channelId, existing.messageId, { content });
    const messageId = await this.deps.api.send(target, { content, replyTo: ev.trigger.messageId });
    this.queuedNotices.set(ev.trigger.messageId, { channelId: target, messageId });
  }

  private async started(ref: ChannelRef, runId: string, seq: number, ev: Ev<"run_started">): Promise<void> {
    const run = this.view(ref, runId, seq, ev.replyTo);
    run.triggerId = ev.trigger.messageId;
    run.triggerText = ev.trigger.text;
    const notice = this.queuedNotices.get(ev.trigger.messageId);
    this.queuedNotices.delete(ev.trigger.messageId);
    if (notice && notice.channelId === run.target) {
      run.mainId = notice.messageId;
      await this.deps.api.edit(run.target, run.mainId, { content: this.progressText(run) });
    } else {
      if (notice) await this.deps.api.remove(notice.channelId, notice.messageId).catch(() => {});
      run.mainId = await this.deps.api.send(run.target, { content: this.progressText(run), replyTo: ev.trigger.messageId });
    }
    run.lastEditAt = Date.now();
    this.startTyping(run);
  }

  /** The run's view; created on first sight (also for a run whose start this process did not see). */
  private view(ref: ChannelRef, runId: string, seq: number, replyTo?: string): RunView {
    let run = this.runs.get(runId);
    if (!run) {
      run = {
        runId,
        target: replyTo ?? ref.channelId,
        lastSeq: seq,
        steps: [],
        status: "",
        tools: [],
        args: new Map(),
        files: [],
        dirty: false,
        lastEditAt: 0,
        typingUntil: Date.now() + TYPING_MAX_MS,
      };
      this.runs.set(runId, run);
    }
    run.lastSeq = Math.max(run.lastSeq, seq);
    return run;
  }

  private progressText(run: RunView): string {
    const lines = [WORKING];
    const hidden = run.steps.length - MAX_STEPS_SHOWN;
    if (hidden > 0) lines.push(`… ${hidden} earlier step${hidden === 1 ? "" : "s"}`);
    lines.push(...run.steps.slice(-MAX_STEPS_SHOWN));
    if (run.status) lines.push(run.status);
    return clip(lines.join("\n"), DISCORD_MESSAGE_LIMIT);
  }

  /** Records the new state and schedules one coalesced edit of the progress message. */
  private setStatus(ref: ChannelRef, run: RunView, status: string): void {
    run.status = status;
    run.dirty = true;
    if (run.editTimer || !run.mainId) return;
    const wait = Math.max(0, run.lastEditAt + this.deps.editIntervalMs - Date.now());
    run.editTimer = setTimeout(() => {
      run.editTimer = undefined;
      void this.enqueue(ref.channelId, () => this.flushProgress(run));
    }, wait);
  }

  private async flushProgress(run: RunView): Promise<void> {
    if (!run.dirty || !run.mainId || !this.runs.has(run.runId)) return;
    run.dirty = false;
    run.lastEditAt = Date.now();
    await this.deps.api.edit(run.target, run.mainId, { content: this.progressText(run) });
  }

  private startTyping(run: RunView): void {
    const beat = () => {
      if (Date.now() > run.typingUntil) return this.stopTimers(run);
      this.deps.api.typing(run.target).catch((err: unknown) => this.deps.log.debug({ err }, "typing indicator failed"));
    };
    beat();
    run.typingTimer = setInterval(beat, this.deps.typingIntervalMs);
    run.typingTimer.unref();
  }

  private stopTimers(run: RunView): void {
    clearInterval(run.typingTimer);
    clearTimeout(run.editTimer);
    run.typingTimer = undefined;
    run.editTimer = undefined;
  }

  private mentions(text: string): string {
    return idsForMentions(text, (u) => this.deps.idOf(u));
  }

  private async finish(run: RunView, ev: Ev<"run_ended">): Promise<void> {
    this.stopTimers(run);
    this.runs.delete(run.runId);
    this.ended.add(run.runId);
    if (this.ended.size > 5000) this.ended.delete(this.ended.values().next().value!);
    const { api } = this.deps;
    if (ev.silent) {
      if (run.mainId) await api.remove(run.target, run.mainId);
      return;
    }
    const { files, problems } = await this.fetchFiles(run.files);
    const parts = [ev.finalText.trim()];
    if (ev.stopReason === "aborted") parts.push(`■ Stopped${ev.errorMessage ? `: ${ev.errorMessage}` : "."}`);
    else if (ev.stopReason === "error") parts.push(`✗ Error: ${ev.errorMessage ?? "unknown error"}`);
    parts.push(...problems);
    let text = this.mentions(parts.filter(Boolean).join("\n\n"));
    if (!text && !files.length) text = "✓ Done (no answer).";
    const chunks = text ? splitMessage(text, DISCORD_MESSAGE_LIMIT) : [""];
    const usage: APIEmbed = { color: GREY, footer: { text: formatUsage(ev.usage, ev.durationMs) } };
    // What the receipts say happened (whatever the answer claims): everything but successful reads.
    const activity = (ev.toolActivity ?? []).filter((a) => a.status !== "succeeded" || a.risk !== "read");
    if (activity.length) {
      const mark = { succeeded: "✓", failed: "✗", denied: "⊘", pending: "…" } as const;
      const lines = activity.map((a) => `${mark[a.status]} \`${a.toolId}\`${a.label ? ` — ${clip(a.label, 120)}` : ""}: ${a.status}${a.detail ? ` (${clip(oneLine(a.detail), 200)})` : ""}`);
      usage.description = clip(lines.join("\n"), 4000);
    }
    const fileGroups: OutFile[][] = [];
    for (let i = 0; i < files.length; i += FILES_PER_MESSAGE) fileGroups.push(files.slice(i, i + FILES_PER_MESSAGE));
    // One message per chunk; the last one also carries the usage and the first group of files.
    const messages = chunks.map((content, i) => ({
      content,
      ...(i === chunks.length - 1 && { embeds: [usage], files: fileGroups.shift() ?? [] }),
    }));
    for (const group of fileGroups) messages.push({ content: "", files: group });
    let first = true;
    for (const m of messages) {
      const out = { ...m, pingUsers: true };
      if (first && run.mainId) await this.deliver(run, out, run.mainId);
      else await this.deliver(run, { ...out, ...(first && run.triggerId && { replyTo: run.triggerId }) });
      first = false;
    }
    if (run.tools.length) await this.postDetails(run);
  }

  /** Sends (or edits into `editId`) one message; when its files are refused (too large), sends it without them and says so. */
  private async deliver(run: RunView, m: { content: string; embeds?: APIEmbed[]; files?: OutFile[]; pingUsers: boolean; replyTo?: string }, editId?: string): Promise<void> {
    const { api } = this.deps;
    const go = (msg: typeof m) => (editId ? api.edit(run.target, editId, msg) : api.send(run.target, msg).then(() => {}));
    try {
      await go(m);
    } catch (err) {
      // Someone deleted the progress message: the answer is posted anew instead of being lost.
      if (editId && (err as { code?: unknown }).code === UNKNOWN_MESSAGE) {
        this.deps.log.info({ runId: run.runId }, "progress message is gone; posting the answer as a new message");
        return this.deliver(run, { ...m, ...(run.triggerId && { replyTo: run.triggerId }) });
      }
      if (!m.files?.length) throw err;
      this.deps.log.warn({ err, runId: run.runId }, "upload refused by Discord; sending the message without its files");
      const note = `📎 ${m.files.map((f) => f.name).join(", ")}: Discord refused the upload (${(err as Error).message}).`;
      const content = m.content ? `${m.content}\n\n${note}` : note;
      const text = content.length > DISCORD_MESSAGE_LIMIT ? m.content : content;
      await go({ ...m, content: text, files: [] });
      if (text === m.content) await api.send(run.target, { content: clip(note, DISCORD_MESSAGE_LIMIT) });
    }
  }

  private async fetchFiles(events: Array<Ev<"attachment">>): Promise<{ files: OutFile[]; problems: string[] }> {
    const files: OutFile[] = [];
    const problems: string[] = [];
    for (const ev of events) {
      const label = ev.title || ev.filename;
      try {
        const data = await this.deps.getFile(ev.objectKey, { maxBytes: this.deps.maxBytes });
        if (!data) problems.push(`📎 ${label}: not available any more (expired from the file store).`);
        else files.push({ name: ev.filename, data, ...(ev.mimeType && { contentType: ev.mimeType }) });
      } catch (err) {
        this.deps.log.warn({ err, objectKey: ev.objectKey }, "outbound attachment could not be read");
        problems.push(`📎 ${label}: could not be sent (${(err as Error).message}).`);
      }
    }
    return { files, problems };
  }

  /** Tool details: a thread on the main message where Discord allows one, else follow-up messages. */
  private async postDetails(run: RunView): Promise<void> {
    const { api } = this.deps;
    let where = run.target;
    if (run.mainId && (await api.threadable(run.target))) {
      const name = clip(`Details: ${oneLine(run.triggerText ?? "") || "mom's run"}`, 100);
      try {
        where = await api.startThread(run.target, run.mainId, name);
      } catch (err) {
        this.deps.log.warn({ err, runId: run.runId }, "could not start a details thread; posting the details as follow-ups");
      }
    }
    for (const embeds of batchEmbeds(run.tools.map(toolEmbed))) await api.send(where, { embeds });
  }
}
