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
