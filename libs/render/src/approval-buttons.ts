// Platforms whose buttons carry a string back (Discord custom ids, Telegram callback data,
// WhatsApp reply ids) write the decision and the approval id into it; one spelling for all of them.

/** What an Allow once / Deny button decides. */
export interface ApprovalButtonChoice {
  decision: "allow-once" | "deny";
  approvalId: string;
  /** The bus channel the prompt belongs to, when the button carries it (a copy in an approver's own chat). */
  channel?: string;
}

/**
 * The id of an Allow once (`allow`) or Deny button: `<prefix>allow:<approvalId>`, and
 * `@<channel>` when the prompt is shown outside its channel (an approver's own chat), so that a
 * click after a restart of the ingress still decides in the channel that asked.
 */
export function approvalButtonId(decision: "allow" | "deny", approvalId: string, prefix = "mom:", channel?: string): string {
  return `${prefix}${decision}:${approvalId}${channel ? `@${channel}` : ""}`;
}

/** A button id written by `approvalButtonId` (with the same prefix) -> the decision; undefined for any other button. */
export function parseApprovalButton(id: string, prefix = "mom:"): ApprovalButtonChoice | undefined {
  if (!id.startsWith(prefix)) return undefined;
  const m = /^(allow|deny):([^@]+)(?:@(.+))?$/.exec(id.slice(prefix.length));
  return m ? { decision: m[1] === "allow" ? "allow-once" : "deny", approvalId: m[2]!, ...(m[3] && { channel: m[3] }) } : undefined;
}
