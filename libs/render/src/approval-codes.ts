import { createHmac, randomInt } from "node:crypto";
import type { ApprovalClick } from "./ingress-kit.js";
import { RecentMap } from "./recent.js";

interface Code {
  approvalId: string;
  channel: string;
  /** How it was used, once it was. */
  spent?: string;
}

/** The prompt a typed answer replies to, as the platform names it (a mail's In-Reply-To). */
export interface PromptRef {
  approvalId: string;
  channel: string;
  /** The prompt's message id, so that it is closed with the outcome (passed as `ApprovalClick.prompt`). */
  promptId?: string;
}

/** How many derived codes a prompt may have been given (a clash with a code in use takes the next). */
const DERIVATIONS = 4;

/**
 * One-time codes for approvals decided by typing (a platform without buttons: a mail's reply, an
 * SMS): 8 digits per prompt, so a code read off one prompt decides nothing else, and each decides
 * once. Kept by code and by the prompt's message id. Without `key` they are random and a restart
 * forgets them (the runner expires the approval). With `key` (the adapter's; a secret where the
 * code is what proves the answer came from whoever read the prompt, as a mail's) a code is
 * derived from it, the channel and the approval id, so after a restart a typed answer still
 * decides the prompt it names or, where nothing names one, the waiting prompt of its chat whose
 * code it is (`decide`'s `recall`); who may decide is then the shell's to say (it
 * reads the prompt back from the bus) and the runner's.
 */
export class ApprovalCodes {
  private readonly codes = new RecentMap<Code>(1000);
  private readonly byPrompt = new RecentMap<string>(1000);
  private readonly key?: string;

  /**
   * A typed answer deciding an approval: its first non-empty line starts `approve <code>` or
   * `deny <code>` (any case, the 8 digits `issue` gives). Undefined for any other text.
   */
  static read(text: string): { decision: ApprovalClick["decision"]; code: string } | undefined {
    const m = /^\s*(approve|deny)\s+(\d{8})\b/i.exec(text.split("\n").find((l) => l.trim()) ?? "");
    return m ? { decision: m[1]!.toLowerCase() === "approve" ? "allow-once" : "deny", code: m[2]! } : undefined;
  }

  /** `where` names the place the code is read from, in a refusal ("the approval mail"). */
  constructor(
    private readonly where = "the approval prompt",
    o: { key?: string } = {},
  ) {
    if (o.key !== undefined) this.key = o.key;
  }

  issue(approvalId: string, channel: string, promptId: string): string {
    // A code in use for another approval is not given twice (a derived one takes the next derivation).
    const taken = (c: string) => {
      const e = this.codes.get(c);
      return e !== undefined && (e.approvalId !== approvalId || e.channel !== channel);
    };
    let code: string;
    let n = 0;
    do code = this.key === undefined ? String(randomInt(10_000_000, 100_000_000)) : this.derive({ approvalId, channel }, n++);
    while (taken(code) && (this.key === undefined || n < DERIVATIONS));
    this.codes.set(code, { approvalId, channel });
    this.byPrompt.set(promptId, code);
    return code;
  }

  private derive(p: PromptRef, n: number): string {
    const mac = createHmac("sha256", this.key!).update(`mom approval code ${n}\n${p.channel}\n${p.approvalId}`).digest();
    return String(10_000_000 + (mac.readUInt32BE(0) % 90_000_000));
  }

  /**
   * The approval a code decides, or the reply saying why it decides nothing. `prompts`: the
   * prompts the answer may reply to, when this process did not give its code (it started since):
   * the code decides the one it was derived for.
   */
  lookup(code: string, prompts: PromptRef[] = []): Code | { refusal: string } {
    const c = this.codes.get(code);
    if (c) return c.spent ? { refusal: `The code ${code} was used already (${c.spent}): nothing was decided.` } : c;
    const prompt = this.key === undefined ? undefined : prompts.find((p) => Array.from({ length: DERIVATIONS }, (_, n) => this.derive(p, n)).includes(code));
    if (prompt) return { approvalId: prompt.approvalId, channel: prompt.channel };
    return { refusal: `No approval is waiting for the code ${code}: nothing was decided. Check the code in ${this.where}.` };
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
   * made spends the code. `recall` names the prompt the answer replies to, read from the platform
   * (a mail's In-Reply-To), or the prompts it may reply to (those waiting in the chat it was typed
   * in, `InboundPort.waitingApprovals`), for a code this process did not give (with `key`; asked
   * only then).
   */
  async decide(
    inbound: { decide(click: ApprovalClick): Promise<{ refusal?: string }> },
    typed: { code: string; decision: ApprovalClick["decision"] },
    user: ApprovalClick["user"],
    recall?: () => PromptRef | PromptRef[] | undefined | Promise<PromptRef | PromptRef[] | undefined>,
  ): Promise<{ refusal?: string }> {
    const known = this.codes.get(typed.code) !== undefined;
    const prompts = known || this.key === undefined ? [] : [(await recall?.()) ?? []].flat();
    const c = this.lookup(typed.code, prompts);
    if ("refusal" in c) return c;
    const prompt = prompts.find((p) => p.approvalId === c.approvalId && p.channel === c.channel);
    const { refusal } = await inbound.decide({ approvalId: c.approvalId, decision: typed.decision, user, channel: c.channel, ...(prompt?.promptId && { prompt: { ref: prompt.promptId } }) });
    if (refusal) return { refusal };
    // A recalled prompt's approvers are not known here: whether `user` decided is the runner's to
    // say, so the code stays good for the one who may (the runner takes one decision).
    if (known) this.spend(typed.code, `${typed.decision === "deny" ? "denied" : "approved"} by ${user.username}`);
    return {};
  }

  /** The prompt closed (decided or expired): its code is spent. */
  closed(promptId: string, how: string): void {
    const code = this.byPrompt.get(promptId);
    if (code) this.spend(code, how);
  }
}
