import { type ApprovalClick, RecentMap } from "@mom/render";

interface Prompt {
  /** None: the message is no approval prompt. */
  approvalId?: string;
  thread?: string;
  /** The bot's own reactions on it, taken back when it closes. */
  reactions: string[];
}

/**
 * Approvals decided by reaction, for a platform with reactions but no buttons (Matrix): the bot
 * reacts to its own prompt with `allow` and `deny`, so each is one click away in every client, and
 * a person's reaction decides. Reactions need no typing and cannot be mistaken for a message to
 * the agent. Prompts are kept by their message id; one from before a restart is recalled from the
 * platform (`recall`: the prompt carries its approval id), so a reaction on it still decides.
 */
export class ApprovalReactions {
  static readonly allow = "✅";
  static readonly deny = "❌";
  /** The line a prompt ends with. */
  static readonly howTo = "React with ✅ to allow once or ❌ to deny.";

  /**
   * A reaction's key as a decision, undefined for any other reaction. The common look-alikes count
   * (👍 👎 ✔ ✖), and emoji variation selectors and skin tones do not matter: clients send the same
   * emoji in several spellings.
   */
  static decisionOf(key: string): ApprovalClick["decision"] | undefined {
    const bare = key.replace(/[\uFE0E\uFE0F]|\p{Emoji_Modifier}/gu, "").trim();
    if (ALLOW_KEYS.has(bare)) return "allow-once";
    if (DENY_KEYS.has(bare)) return "deny";
    return undefined;
  }

  private readonly prompts = new RecentMap<Prompt>(1000);
  /** Prompts of before a restart, and messages that are none, as `recall` found them. */
  private readonly recalled = new RecentMap<Omit<Prompt, "reactions"> & { text?: string }>(1000);

  /**
   * A prompt was posted, before the bot's reactions go up (a person may react first): push each
   * reaction's id onto the list returned.
   */
  posted(promptId: string, approvalId: string, thread?: string): string[] {
    const reactions: string[] = [];
    this.prompts.set(promptId, { approvalId, ...(thread && { thread }), reactions });
    return reactions;
  }

  /** The prompt closed (decided or expired): the bot's own reactions on it, to take back. */
  closed(promptId: string): string[] {
    const reactions = this.prompts.get(promptId)?.reactions ?? [];
    this.prompts.delete(promptId);
    return reactions;
  }

  /**
   * A person's reaction `key` on the message `promptId` -> the decision through `inbound.decide`.
   * `recall` reads a prompt this process does not know (posted before a restart) from the
   * platform: its approval id, thread and text (without `howTo`), or undefined when the message is
   * none; asked once per message. Resolves with undefined when the reaction decides nothing
   * (another emoji, no prompt), else with the refusal to tell `user` when they may not decide,
   * and the prompt's thread.
   */
  async decide(
    inbound: { decide(click: ApprovalClick): Promise<{ refusal?: string }> },
    reaction: { promptId: string; key: string; channel: string; user: ApprovalClick["user"] },
    recall: () => Promise<{ approvalId: string; thread?: string; text?: string } | undefined>,
  ): Promise<{ refusal?: string; thread?: string } | undefined> {
    const decision = ApprovalReactions.decisionOf(reaction.key);
    if (!decision) return undefined;
    const shown = this.prompts.get(reaction.promptId);
    const prompt = shown ?? (await this.recalled.remember(reaction.promptId, async () => (await recall()) ?? {}));
    if (!prompt.approvalId) return undefined;
    // A recalled prompt goes with the decision, so that it is closed with the outcome (its text as `recall` read it).
    const text = shown ? undefined : this.recalled.get(reaction.promptId)?.text;
    const recalled = shown ? {} : { prompt: { ref: reaction.promptId, ...(text !== undefined && { text }) } };
    const { refusal } = await inbound.decide({ approvalId: prompt.approvalId, decision, user: reaction.user, channel: reaction.channel, ...recalled });
    return { ...(refusal && { refusal }), ...(prompt.thread && { thread: prompt.thread }) };
  }
}

const ALLOW_KEYS = new Set(["✅", "👍", "✔"]);
const DENY_KEYS = new Set(["❌", "👎", "✖"]);
