// Platforms whose buttons carry a string back (Discord custom ids, Telegram callback data,
// WhatsApp reply ids) write the decision and the approval id into it; one spelling for all of them.

/** What an Allow once / Deny button decides. */
export interface ApprovalButtonChoice {
  decision: "allow-once" | "deny";
  approvalId: string;
}

/** The id of an Allow once (`allow`) or Deny button: `<prefix>allow:<approvalId>`. */
export function approvalButtonId(decision: "allow" | "deny", approvalId: string, prefix = "mom:"): string {
  return `${prefix}${decision}:${approvalId}`;
}

/** A button id written by `approvalButtonId` (with the same prefix) -> the decision; undefined for any other button. */
export function parseApprovalButton(id: string, prefix = "mom:"): ApprovalButtonChoice | undefined {
  if (!id.startsWith(prefix)) return undefined;
  const m = /^(allow|deny):(.+)$/.exec(id.slice(prefix.length));
  return m ? { decision: m[1] === "allow" ? "allow-once" : "deny", approvalId: m[2]! } : undefined;
}
