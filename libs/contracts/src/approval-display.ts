// What an approver is shown must be what runs. `approval_requested.argsSummary` is written with
// `visible()`: every character that a terminal or a chat client would not show as itself (control
// characters, escapes, bidi overrides, zero-width and other format characters, unusual spaces,
// combining marks stacked on ASCII) is spelled out. The runner writes the summary this way and
// refuses to ask about one longer than the adapter can show whole (APPROVAL_TEXT_LIMITS); every
// adapter shows it with `visible()` applied again (a no-op on the runner's text) and never clips it.

/** Characters shown as an escape wherever they are (Unicode general categories and properties). */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}\p{Default_Ignorable_Code_Point}\u2800]|(?! )\p{Zs}/u;
/** A combining mark: escaped where it would stack on an ASCII character (or on nothing). */
const MARK = /\p{M}/u;

const NAMED: Record<string, string> = { "\n": "\\n", "\t": "\\t", "\r": "\\r", "\v": "\\v", "\f": "\\f", "\b": "\\b", "\x1b": "\\x1b" };

/** One hidden character, spelled: `\r`, `\x1b`, `\x85`, `<U+202E>`. */
export function spellCodePoint(ch: string): string {
  const named = NAMED[ch];
  if (named) return named;
  const cp = ch.codePointAt(0)!;
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return `\\x${cp.toString(16).padStart(2, "0")}`;
  return `<U+${cp.toString(16).toUpperCase().padStart(4, "0")}>`;
}

/**
 * `text` with nothing hidden: C0/C1 controls as `\r`, `\t`, `\x1b`, `\x85`; format, bidi,
 * zero-width, private-use, unassigned and default-ignorable characters, spaces other than U+0020,
 * line/paragraph separators and combining marks on ASCII as `<U+XXXX>`. Newlines stay line breaks
 * unless `newlines: false`. Idempotent: its output is only printable characters and newlines.
 */
export function visible(text: string, opts: { newlines?: boolean } = {}): string {
  const keepNewlines = opts.newlines !== false;
  let out = "";
  let onAscii = true;
  for (const ch of text) {
    if (ch === "\n" && keepNewlines) {
      out += ch;
      onAscii = true;
    } else if (HIDDEN.test(ch) || (onAscii && MARK.test(ch))) {
      out += spellCodePoint(ch);
      onAscii = true;
    } else {
      out += ch;
      onAscii = ch.charCodeAt(0) < 0x80;
    }
  }
  return out;
}

/** True when `visible(text)` would change something. */
export function hasHidden(text: string): boolean {
  return visible(text) !== text;
}

/**
 * How many characters of `argsSummary` each kind of adapter shows whole in one approval prompt,
 * together with the rest of the prompt (the tool, who asked, who decides, the deadline): Discord's
 * 2,000-character message, WhatsApp's 1,024-character button body, Telegram's 4,096, Slack's
 * 3,000-character sections (a longer prompt is spread over several), the terminal's screen. The
 * runner denies a call whose summary is longer (`approvalDisplayLength`), so nothing is clipped.
 */
export const APPROVAL_TEXT_LIMITS: Readonly<Record<string, number>> = {
  cli: 4000,
  slack: 2500,
  discord: 1500,
  telegram: 3500,
  whatsapp: 650,
};

/** The limit for an adapter type; an unknown type gets the smallest. */
export function approvalTextLimit(adapterType: string | undefined): number {
  return (adapterType && APPROVAL_TEXT_LIMITS[adapterType]) || Math.min(...Object.values(APPROVAL_TEXT_LIMITS));
}

/**
 * Characters `text` takes in a prompt: its length, plus one for every ``` in it (adapters break a
 * fence inside the arguments with a zero-width space so it cannot close their code block).
 */
export function approvalDisplayLength(text: string): number {
  return text.length + (text.match(/```/g)?.length ?? 0);
}
