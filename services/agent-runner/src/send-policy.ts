import type { MomConfig } from "@mom/config";
import { ADAPTER_NAME_PATTERN, type ChannelRef, qualifiedChannelId, type Sender } from "@mom/contracts";

// Who may post where with the `send` tool, decided here and nowhere else (docs/tools.md
// "Messages to other channels: send"). The model's `channel` argument is untrusted: it is read
// as exactly one channel, never as a pattern, and must fall under a route the operator wrote.

/** A route's `<adapter>/<channelId>` or `<adapter>/*`: the only wildcard is a whole `*` channel. */
function routeMatches(pattern: string, ref: ChannelRef): boolean {
  const slash = pattern.indexOf("/");
  if (slash <= 0) return false;
  const channel = pattern.slice(slash + 1);
  return pattern.slice(0, slash) === ref.adapter && (channel === "*" || channel === ref.channelId);
}

/** The `to` entries of every route whose `from` names this channel: where its runs may post (none: no send tool). */
export function sendTargets(config: Pick<MomConfig, "send">, from: ChannelRef): string[] {
  const targets = config.send.routes.filter((r) => routeMatches(r.from, from)).flatMap((r) => r.to);
  return [...new Set(targets)];
}

export type SendDecision =
  | {
      ok: true;
      target: ChannelRef;
      /** How the target's ingress establishes that the requester may see the channel (PostEvent.access). */
      access: "check" | "operator";
    }
  | { ok: false; reason: string };

const MAX_CHANNEL_ID = 256;

/**
 * `<adapter>/<channelId>` as the model wrote it, or why it is not one channel: an adapter of
 * config.json, and a channel id without spaces, control characters, wildcard characters (a
 * literal `*` must not pass for a route's "any channel") or `.`/`..` path segments.
 */
export function parseSendTarget(config: Pick<MomConfig, "adapters">, text: string): ChannelRef | string {
  const shown = JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text);
  const slash = text.indexOf("/");
  if (slash <= 0) return `${shown} is not a channel: write "<adapter>/<channelId>", e.g. "slack/C0123"`;
  const adapter = text.slice(0, slash);
  const channelId = text.slice(slash + 1);
  if (!ADAPTER_NAME_PATTERN.test(adapter) || !config.adapters[adapter]) return `${shown}: no adapter "${adapter}" in this mom (adapters: ${Object.keys(config.adapters).join(", ")})`;
  if (!channelId || channelId.length > MAX_CHANNEL_ID) return `${shown}: the channel id is empty or too long`;
  if (/[\s\p{Cc}\p{Cf}*>?[\]{}]/u.test(channelId) || /(^|\/)\.\.?(\/|$)/.test(channelId)) return `${shown}: not one channel id (no spaces, wildcards or control characters)`;
  return { adapter, channelId };
}

/**
 * Whether a run of `from`, started by `requester`, may post into `target`:
 * - `target` is one channel of a configured adapter, and not `from` itself;
 * - config.json `send.routes` has a route from `from` to it (deny by default);
 * - a person asked: a run started by a bot or a scheduled event posts nowhere;
 * - they can be checked to see the target: on the same adapter the target's ingress asks its
 *   platform ("check"); the person at a terminal (cli adapter) runs mom and may post anywhere a
 *   route allows ("operator"); someone on another platform has no account there mom knows of,
 *   so mom cannot check, and refuses.
 */
export function decideSend(config: Pick<MomConfig, "adapters" | "send">, from: ChannelRef, target: string, requester: Sender): SendDecision {
  const parsed = parseSendTarget(config, target);
  if (typeof parsed === "string") return { ok: false, reason: parsed };
  const where = qualifiedChannelId(parsed);
  if (parsed.adapter === from.adapter && parsed.channelId === from.channelId) return { ok: false, reason: `${where} is this channel: answer here instead` };
  if (!sendTargets(config, from).some((t) => routeMatches(t, parsed))) {
    return { ok: false, reason: `config.json send.routes allows no post from ${qualifiedChannelId(from)} to ${where}` };
  }
  if (requester.isBot) {
    return { ok: false, reason: `a person must ask for it: this run was started by ${requester.username} (a bot or a scheduled event), and whether they may see ${where} cannot be checked` };
  }
  if (config.adapters[from.adapter]?.type === "cli") return { ok: true, target: parsed, access: "operator" };
  if (parsed.adapter === from.adapter) return { ok: true, target: parsed, access: "check" };
  return {
    ok: false,
    reason: `@${requester.username} asked on ${from.adapter}; mom cannot check whether they can see ${where} on ${parsed.adapter}, another platform (only the operator's terminal posts across platforms)`,
  };
}
