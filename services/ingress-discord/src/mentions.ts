// Discord writes mentions as `<@id>` (users; `<@!id>` in old clients), `<@&id>` (roles) and
// `<#id>` (channels). mom's agent reads and writes plain `@username` (docs/architecture.md), so
// inbound text gets names and outbound text gets ids back, except inside code.

export interface MentionNames {
  user(id: string): string | undefined;
  role?(id: string): string | undefined;
  channel?(id: string): string | undefined;
}

/** `<@123>` -> `@ana`, `<@&5>` -> `@admins`, `<#7>` -> `#general`; unknown ids stay as they are. */
export function namesForMentions(text: string, names: MentionNames): string {
  return text.replace(/<(@!?|@&|#)(\d+)>/g, (whole, kind: string, id: string) => {
    if (kind === "@&") {
      const name = names.role?.(id);
      return name ? `@${name}` : whole;
    }
    if (kind === "#") {
      const name = names.channel?.(id);
      return name ? `#${name}` : whole;
    }
    const name = names.user(id);
    return name ? `@${name}` : whole;
  });
}

// Fenced blocks (closed or running to the end) and inline code spans are left alone.
const CODE = /```[\s\S]*?(?:```|$)|`[^`\n]*`/g;
// A handle: letters, digits, `_` and `.` (Discord usernames), not part of an e-mail address or an existing `<@id>`.
const HANDLE = /(?<![\w@<.])@([A-Za-z0-9_.]{2,32})/g;

/** `@ana` -> `<@123>` for the users `idOf` knows, outside code; everything else is left as written. */
export function idsForMentions(text: string, idOf: (username: string) => string | undefined): string {
  const swap = (plain: string) =>
    plain.replace(HANDLE, (whole, handle: string) => {
      let name = handle;
      let rest = "";
      for (;;) {
        const id = idOf(name);
        if (id) return `<@${id}>${rest}`;
        if (!name.endsWith(".")) return whole;
        name = name.slice(0, -1);
        rest = `.${rest}`;
      }
    });
  let out = "";
  let at = 0;
  for (const m of text.matchAll(CODE)) {
    out += swap(text.slice(at, m.index)) + m[0];
    at = m.index! + m[0].length;
  }
  return out + swap(text.slice(at));
}
