import { RecentMap } from "@mom/ingress-sdk";
import { randomInt } from "node:crypto";

/** A reply deciding an approval: its first line (quoted text and signature removed) is `approve <code>` or `deny <code>`, any case. */
export function approvalCommand(visibleText: string): { decision: "allow-once" | "deny"; code: string } | undefined {
  const m = /^\s*(approve|deny)\s+(\d{8})\b/i.exec(visibleText.split("\n").find((l) => l.trim()) ?? "");
  return m ? { decision: m[1]!.toLowerCase() === "approve" ? "allow-once" : "deny", code: m[2]! } : undefined;
}

export const decideHint = (code: string): string => `To decide, reply to this mail with "approve ${code}" or "deny ${code}" as its first line.`;

interface Code {
  approvalId: string;
  channel: string;
  /** How it was used, once it was. */
  spent?: string;
}

/** The one-time codes of the approval prompts this process sent, by code and by the prompt's Message-ID. */
export class ApprovalCodes {
  private readonly codes = new RecentMap<Code>(1000);
  private readonly byPrompt = new RecentMap<string>(1000);

  issue(approvalId: string, channel: string, promptId: string): string {
    let code: string;
    do code = String(randomInt(10_000_000, 100_000_000));
    while (this.codes.get(code));
    this.codes.set(code, { approvalId, channel });
    this.byPrompt.set(promptId, code);
    return code;
  }

  /** The approval a code decides, or the reply saying why it decides nothing. */
  lookup(code: string): Code | { refusal: string } {
    const c = this.codes.get(code);
    if (!c) return { refusal: `No approval is waiting for the code ${code}: nothing was decided. Check the code in the approval mail.` };
    return c.spent ? { refusal: `The code ${code} was used already (${c.spent}): nothing was decided.` } : c;
  }

  /** The code decided its approval, or the approval ended: it decides nothing more. */
  spend(code: string, how: string): void {
    const c = this.codes.get(code);
    if (c && !c.spent) c.spent = how;
  }

  closed(promptId: string, how: string): void {
    const code = this.byPrompt.get(promptId);
    if (code) this.spend(code, how);
  }
}
