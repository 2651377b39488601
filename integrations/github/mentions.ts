// What the model writes to GitHub is posted as the token's account: an @-mention in it would
// notify that person, and `@org/team` a whole team. Unless the operator allows mentions, each one
// outside code gets a zero-width space after its `@` (written `&#8203;`, as bots such as Renovate
// do): GitHub shows the same text and notifies nobody. Code spans and fenced blocks are left as
// they are — mentions do not notify there, and an entity would show literally.

// GitHub's user names: letters, digits and single hyphens, up to 39; a team is `@org/team`.
// Anything but a word character before the `@` (an e-mail address is no mention) may start one.
const MENTION = /(^|[^A-Za-z0-9_])@([A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}(?:\/[A-Za-z0-9_.-]+)?)/g;

export interface Defused {
  text: string;
  /** The mentions that were made inert, as written (`@alice`, `@acme/core`). */
  mentions: string[];
}

export function defuseMentions(markdown: string): Defused {
  const mentions: string[] = [];
  const text = splitCode(markdown)
    .map((part) =>
      part.code
        ? part.text
        : part.text.replace(MENTION, (_m, before: string, name: string) => {
            mentions.push(`@${name}`);
            return `${before}@&#8203;${name}`;
          }),
    )
    .join("");
  return { text, mentions: [...new Set(mentions)] };
}

/**
 * The text in pieces that are code (fenced blocks, indented by up to 3 spaces, and inline code
 * spans closed by a backtick run of the same length) or not. An unclosed fence runs to the end,
 * as in CommonMark; an unclosed backtick run is plain text.
 */
export function splitCode(markdown: string): Array<{ code: boolean; text: string }> {
  const parts: Array<{ code: boolean; text: string }> = [];
  const push = (code: boolean, text: string) => {
    if (!text) return;
    const last = parts.at(-1);
    if (last && last.code === code) last.text += text;
    else parts.push({ code, text });
  };
  const lines = markdown.split(/(?<=\n)/);
  let prose = "";
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})/.exec(lines[i]!);
    if (!open) {
      prose += lines[i];
      continue;
    }
    for (const p of splitSpans(prose)) push(p.code, p.text);
    prose = "";
    const fence = open[1]!;
    let block = lines[i]!;
    for (i++; i < lines.length; i++) {
      block += lines[i];
      if (new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`).test(lines[i]!)) break;
    }
    push(true, block);
  }
  for (const p of splitSpans(prose)) push(p.code, p.text);
  return parts;
}

function splitSpans(text: string): Array<{ code: boolean; text: string }> {
  const out: Array<{ code: boolean; text: string }> = [];
  let at = 0;
  let plainFrom = 0;
  while (at < text.length) {
    const open = /`+/g;
    open.lastIndex = at;
    const m = open.exec(text);
    if (!m) break;
    const run = m[0];
    const close = new RegExp(`(?<!\`)${run}(?!\`)`, "g");
    close.lastIndex = m.index + run.length;
    const end = close.exec(text);
    if (!end) {
      at = m.index + run.length;
      continue;
    }
    out.push({ code: false, text: text.slice(plainFrom, m.index) });
    out.push({ code: true, text: text.slice(m.index, end.index + run.length) });
    at = plainFrom = end.index + run.length;
  }
  out.push({ code: false, text: text.slice(plainFrom) });
  return out.filter((p) => p.text);
}
