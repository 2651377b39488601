import { RecentMap } from "@mom/ingress-sdk";

// Matrix has no buttons. An approval prompt is a message the bot reacts to with ✅ and ❌ itself,
// so each is one click away in every client; a person's ✅ (or 👍) on it allows once, ❌ (or 👎)
// denies. The prompt carries its approval id in its content (APPROVAL_FIELD), so a reaction still
// reaches the runner after the ingress restarted.

export const ALLOW = "✅";
export const DENY = "❌";
export const APPROVAL_FIELD = "mom.approval";
export const HOW_TO_DECIDE = `React with ${ALLOW} to allow once or ${DENY} to deny.`;

const ALLOW_KEYS = new Set([ALLOW, "👍", "✔"]);
const DENY_KEYS = new Set([DENY, "👎", "✖"]);

/** A reaction key as a decision; emoji variation selectors (U+FE0F) and skin tones do not matter. */
export function decisionOf(key: string): "allow-once" | "deny" | undefined {
  const bare = key.replace(/[\uFE0E\uFE0F]|\p{Emoji_Modifier}/gu, "").trim();
  if (ALLOW_KEYS.has(bare)) return "allow-once";
  if (DENY_KEYS.has(bare)) return "deny";
  return undefined;
}

export interface PostedPrompt {
  approvalId: string;
  /** The thread the prompt is in: a refusal is said there. */
  thread?: string;
  /** The bot's own ✅ / ❌ reactions, taken back when the prompt closes. */
  reactions: string[];
}

/** Prompts on screen by event id. */
export class Prompts {
  private readonly byEvent = new RecentMap<PostedPrompt>(1_000);

  add(eventId: string, prompt: PostedPrompt): void {
    this.byEvent.set(eventId, prompt);
  }

  get(eventId: string): PostedPrompt | undefined {
    return this.byEvent.get(eventId);
  }

  delete(eventId: string): void {
    this.byEvent.delete(eventId);
  }
}
