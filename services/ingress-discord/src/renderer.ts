import { approvalButtonId, type BatchLimits, clip, type Dialect, type Ev, fenceSafe, formatDuration, idsForMentions, markdownDialect, type Placement, type Step, ThreadedLayout, type ThreadMessage, type ThreadSurface, type ToolStep } from "@mom/ingress-sdk";
import type { APIEmbed } from "discord.js";
import type { Logger } from "pino";
import type { DiscordApi, OutMessage } from "./discord-api.js";
import { DISCORD_MESSAGE_LIMIT } from "./discord-options.js";

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

/** Button custom ids: `mom-approval:allow:<approvalId>` / `mom-approval:deny:<approvalId>` (`approvalButtonId`). */
export const APPROVAL_PREFIX = "mom-approval:";

/** Discord's error code for a message that does not exist (any more). */
const UNKNOWN_MESSAGE = 10008;
const GREEN = 0x2ecc71;
const RED = 0xe74c3c;
const GREY = 0x95a5a6;

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

/** Embeds per message and characters over all of them (Discord's limits). */
export const EMBED_LIMITS: BatchLimits<APIEmbed> = { count: 10, weight: 6000, weigh: embedChars };

/** Discord's Markdown (notes escaped, so a label's `*` or `_` shows as written); `@username` mentions become `<@id>`. */
export function discordDialect(idOf: (username: string) => string | undefined): Dialect {
  return { ...markdownDialect({ limit: DISCORD_MESSAGE_LIMIT, mention: (id) => `<@${id}>` }), fromMarkdown: (md) => idsForMentions(md, idOf) };
}

/** Discord's primitives for the ThreadedLayout (a thread, like a DM, is a channel of its own). */
class DiscordSurface implements ThreadSurface<APIEmbed, DiscordPrompt> {
  readonly name = "Discord";
  readonly dialect: Dialect;
  readonly detailLimits = EMBED_LIMITS;

  constructor(private readonly deps: RendererDeps) {
    this.dialect = discordDialect((u) => deps.idOf(u));
  }

  /** The Discord channel a message goes to: its thread, else where the message it answers is, else the channel. */
  private where(channel: string, at: Placement): string {
    return at.thread ?? (at.replyTo && this.deps.channelOfMessage(at.replyTo)) ?? channel;
  }

  private out(m: ThreadMessage<APIEmbed>): OutMessage {
    const footer = m.footer && { color: GREY, footer: { text: m.footer.usage }, ...(m.footer.activity.length && { description: clip(m.footer.activity.join("\n"), 4000) }) };
    const embeds = [...(m.details ?? []), ...(footer ? [footer] : [])];
    return { ...(!m.details && { content: m.text }), ...(embeds.length && { embeds }), ...(m.files && { files: m.files }), ...(m.ping && { pingUsers: true }) };
  }

  post(channel: string, m: ThreadMessage<APIEmbed>, at: Placement): Promise<string> {
    return this.deps.api.send(this.where(channel, at), { ...this.out(m), ...(at.replyTo && { replyTo: at.replyTo }) });
  }

  edit(channel: string, id: string, m: ThreadMessage<APIEmbed>, at: Placement): Promise<void> {
    return this.deps.api.edit(this.where(channel, at), id, this.out(m));
  }

  delete(channel: string, id: string, at: Placement): Promise<void> {
    return this.deps.api.remove(this.where(channel, at), id);
  }

  async thread(channel: string, id: string, at: Placement, name: string): Promise<string | undefined> {
    const target = this.where(channel, at);
    return (await this.deps.api.threadable(target)) ? this.deps.api.startThread(target, id, clip(name, 100)) : undefined;
  }

  detail(step: Step): APIEmbed | undefined {
    return step.kind === "tool" ? toolEmbed(step) : undefined;
  }

  /** Allow once / Deny buttons on a message that pings the approvers. */
  async prompt(channel: string, text: string, ev: Ev<"approval_requested">, at: Placement): Promise<DiscordPrompt> {
    const button = (decision: "allow" | "deny", style: number, label: string) => ({ type: 2, style, label, custom_id: approvalButtonId(decision, ev.approvalId, APPROVAL_PREFIX) });
    const components = [{ type: 1, components: [button("allow", 3, "Allow once"), button("deny", 4, "Deny")] }];
    const target = this.where(channel, at);
    const messageId = await this.deps.api.send(target, { content: clip(text, DISCORD_MESSAGE_LIMIT), components, pingUsers: ev.approvers, ...(at.replyTo && { replyTo: at.replyTo }) });
    return { messageChannelId: target, messageId };
  }

  async closePrompt(_channel: string, p: DiscordPrompt, text: string): Promise<void> {
    await this.deps.api.edit(p.messageChannelId, p.messageId, { content: clip(text, DISCORD_MESSAGE_LIMIT), components: [] });
  }

  isGone(err: unknown): boolean {
    return (err as { code?: unknown }).code === UNKNOWN_MESSAGE;
  }

  typing(channel: string, at: Placement): Promise<void> {
    return this.deps.api.typing(this.where(channel, at));
  }

  deadline(expiresAt: string): string {
    return `<t:${Math.floor(Date.parse(expiresAt) / 1000)}:R>`;
  }
}

/**
 * A run in Discord (docs/discord.md, "How mom answers"), the SDK's ThreadedLayout: a main message
 * replying to the trigger (a line per finished step, `→ label`) that becomes the answer, its files
 * and a usage embed (with the receipts' activity) on the last piece; tool details as embeds when
 * the run ends, in a thread on the main message where the channel allows one, else as follow-ups;
 * a queued notice that becomes the main message; prompts that ping their approvers.
 */
export class DiscordLayout extends ThreadedLayout<APIEmbed, DiscordPrompt> {
  constructor(deps: RendererDeps) {
    super(new DiscordSurface(deps), deps.log);
  }
}
