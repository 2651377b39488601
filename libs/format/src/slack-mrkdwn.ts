// Standard Markdown (what the agent writes) <-> Slack mrkdwn (what Slack shows and sends).
//
// Outbound, the conversion itself is slackify-markdown (remark based: bold, italic, strike, code,
// links, lists, headings, quotes). Two things it leaves to us are fixed afterwards:
// - Slack wants `&`, `<` and `>` escaped everywhere, code included (an unescaped `<!channel>` or
//   `<@U1>` inside a code block still pings); the library escapes them only outside code.
// - A Markdown hard break (`line\` or two trailing spaces) comes out as a literal `\`.
// Then `@username` becomes a real Slack mention `<@U…>` when the username is known, outside code.
//
// Inbound, Slack's control sequences become plain text a model reads well: `<@U1>` -> `@alice`,
// `<#C1|general>` -> `#general`, `<https://x|label>` -> `[label](https://x)`, entities decoded.
import slackify from "slackify-markdown";

export interface MrkdwnOptions {
  /** Slack user id for a username mom wrote as `@username`; undefined leaves the text as it is. */
  userIdFor?: (username: string) => string | undefined;
}

interface Segment {
  text: string;
  code: boolean;
}

/** Splits mrkdwn into code (``` blocks and `inline` spans) and the text around it. */
function segments(mrkdwn: string): Segment[] {
  const out: Segment[] = [];
  const re = /```[\s\S]*?```|`[^`\n]+`/g;
  let last = 0;
  for (let m = re.exec(mrkdwn); m; m = re.exec(mrkdwn)) {
    if (m.index > last) out.push({ text: mrkdwn.slice(last, m.index), code: false });
    out.push({ text: m[0], code: true });
    last = m.index + m[0].length;
  }
  if (last < mrkdwn.length) out.push({ text: mrkdwn.slice(last), code: false });
  return out;
}

/** Escapes Slack's three control characters (used for code, which the converter leaves raw). */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function escapeCode(segment: string): string {
  const fence = segment.startsWith("```") ? "```" : "`";
  return fence + escapeMrkdwn(segment.slice(fence.length, segment.length - fence.length)) + fence;
}

const MENTION = /(^|[^\w@./<|&])@([A-Za-z0-9_][A-Za-z0-9._-]*)/g;

/**
 * `@alice` -> `<@U1>` for known usernames (Slack's and Discord's way to write a person); a trailing
 * `.`/`-`/`_` that is not part of a known name stays text. `idsForMentions` leaves code alone.
 */
export function linkMentions(text: string, userIdFor: (username: string) => string | undefined): string {
  return text.replace(MENTION, (whole, before: string, name: string) => {
    for (let n = name; n; n = n.replace(/[._-]$/, "")) {
      const id = userIdFor(n);
      if (id) return `${before}<@${id}>${name.slice(n.length)}`;
      if (!/[._-]$/.test(n)) break;
    }
    return whole;
  });
}

/** `@name` -> `<@id>` for the names `idOf` knows, outside code spans and fences; the rest as written. */
export function idsForMentions(text: string, idOf: (username: string) => string | undefined): string {
  return segments(text)
    .map((s) => (s.code ? s.text : linkMentions(s.text, idOf)))
    .join("");
}

/** Standard Markdown -> Slack mrkdwn (see the file comment). */
export function markdownToMrkdwn(markdown: string, opts: MrkdwnOptions = {}): string {
  if (!markdown.trim()) return "";
  const converted = slackify(markdown).replace(/\n+$/, "");
  return segments(converted)
    .map((s) => {
      if (s.code) return escapeCode(s.text);
      const text = s.text.replace(/\\\n/g, "\n");
      return opts.userIdFor ? linkMentions(text, opts.userIdFor) : text;
    })
    .join("");
}

export interface SlackNames {
  /** Username for a Slack user id (`alice`), undefined when unknown. */
  user?: (id: string) => string | undefined;
  /** Channel name for a channel id (`general`), undefined when unknown. */
  channel?: (id: string) => string | undefined;
}

function unescapeEntities(text: string): string {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

/**
 * Slack message text -> plain text with Markdown links: `<@U1>` -> `@alice`, `<#C1|general>` ->
 * `#general`, `<!here>` -> `@here`, `<https://x|x>` -> `https://x`, `<https://x|label>` ->
 * `[label](https://x)`, `&lt;` -> `<`. Unknown users keep their id (`@U1`).
 */
export function mrkdwnToText(text: string, names: SlackNames = {}): string {
  const replaced = text.replace(/<([^<>]*)>/g, (_whole, inner: string) => {
    const bar = inner.indexOf("|");
    const target = bar >= 0 ? inner.slice(0, bar) : inner;
    const label = bar >= 0 ? inner.slice(bar + 1) : undefined;
    if (target.startsWith("@")) {
      const id = target.slice(1);
      return `@${names.user?.(id) ?? label?.replace(/^@/, "") ?? id}`;
    }
    if (target.startsWith("#")) {
      const id = target.slice(1);
      return `#${names.channel?.(id) ?? label ?? id}`;
    }
    if (target.startsWith("!")) {
      const special = target.slice(1);
      if (special.startsWith("subteam^") || special.startsWith("date^")) return label ?? special;
      return `@${special}`;
    }
    const url = unescapeEntities(target);
    if (url.startsWith("mailto:")) return label ? unescapeEntities(label) : url.slice("mailto:".length);
    if (!label || unescapeEntities(label) === url) return url;
    return `[${unescapeEntities(label)}](${url})`;
  });
  return unescapeEntities(replaced);
}
