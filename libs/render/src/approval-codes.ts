import { randomInt } from "node:crypto";
import type { ApprovalClick } from "./ingress-kit.js";
import { RecentMap } from "./recent.js";

interface Code {
  approvalId: string;
  channel: string;
  /** How it was used, once it was. */
  spent?: string;
}

/**
 * One-time codes for approvals decided by typing (a platform without buttons: a mail's reply, an
 * SMS): 8 random digits per prompt, so a code read off one prompt decides nothing else, and each
 * decides once. Kept by code and by the prompt's message id; a restart forgets them (the runner
 * expires the approval).
 */
export class ApprovalCodes {
  private readonly codes = new RecentMap<Code>(1000);
  private readonly byPrompt = new RecentMap<string>(1000);

  /**
   * A typed answer deciding an approval: its first non-empty line starts `approve <code>` or
   * `deny <code>` (any case, the 8 digits `issue` gives). Undefined for any other text.
   */
  static read(text: string): { decision: ApprovalClick["decision"]; code: string } | undefined {
    const m = /^\s*(approve|deny)\s+(\d{8})\b/i.exec(text.split("\n").find((l) => l.trim()) ?? "");
    return m ? { decision: m[1]!.toLowerCase() === "approve" ? "allow-once" : "deny", code: m[2]! } : undefined;
  }

  /** `where` names the place the code is read from, in a refusal ("the approval mail"). */
  constructor(private readonly where = "the approval prompt") {}

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
    if (!c) return { refusal: `No approval is waiting for the code ${code}: nothing was decided. Check the code in ${this.where}.` };
    return c.spent ? { refusal: `The code ${code} was used already (${c.spent}): nothing was decided.` } : c;
  }

  /** The code decided its approval, or the approval ended: it decides nothing more. */
  spend(code: string, how: string): void {
    const c = this.codes.get(code);
    if (c && !c.spent) c.spent = how;
  }

  /**
   * A typed `approve <code>` / `deny <code>` -> the approval decision through `inbound.decide`.
   * Resolves with the line to send back when nothing was decided: the code is unknown or used
   * already, or `user` may not decide (the decision is sent, and refused by the runner). A decision
   * made spends the code.
   */
  async decide(
    inbound: { decide(click: ApprovalClick): Promise<{ refusal?: string }> },
    typed: { code: string; decision: ApprovalClick["decision"] },
    user: ApprovalClick["user"],
  ): Promise<{ refusal?: string }> {
    const c = this.lookup(typed.code);
    if ("refusal" in c) return c;
    const { refusal } = await inbound.decide({ approvalId: c.approvalId, decision: typed.decision, user, channel: c.channel });
    if (refusal) return { refusal };
    this.spend(typed.code, `${typed.decision === "deny" ? "denied" : "approved"} by ${user.username}`);
    return {};
  }

  /** The prompt closed (decided or expired): its code is spent. */
  closed(promptId: string, how: string): void {
    const code = this.byPrompt.get(promptId);
    if (code) this.spend(code, how);
  }
}
