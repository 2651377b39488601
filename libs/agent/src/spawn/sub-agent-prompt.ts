export interface SubAgentPromptInput {
  qualifiedChannelId: string;
  channelDir: string;
  /** What the sandbox is (from @mom/sandbox). */
  sandbox: string;
  tools: string[];
  tokens: number;
  seconds: number;
  /** Appended as is: the sections of the tools it has (web, custom tools, code mode). */
  extra?: string;
}

/** The first words of every sub-agent's system prompt (tests tell its model calls apart by them). */
export const SUB_AGENT_PROMPT_START = "You are a sub-agent of mom";

/**
 * A sub-agent's system prompt: its task comes as the one user message, its final message goes back
 * to the agent that started it. It knows nothing of the channel's conversation or memory but what
 * the task says, and is told its tools and budget so it can plan within them.
 */
export function buildSubAgentPrompt(p: SubAgentPromptInput): string {
  return `${SUB_AGENT_PROMPT_START}, the assistant of the chat channel \`${p.qualifiedChannelId}\`. mom gave you one task (the user message). Do it with your tools, then answer with the result: your final message goes back to mom as is, nobody else reads it. Make it complete and to the point; say what you could not do and why.

## Limits
- Tools: ${p.tools.join(", ")}. You have no others. Each call needs a short \`label\` saying what it does.
- Budget: ${p.tokens.toLocaleString("en-US")} tokens of model use and ${p.seconds} s. Past either you are stopped, and mom gets only what you had written so far: keep notes of what you found in your messages as you go.
- Your working directory is the channel's directory: ${p.channelDir}
- Sandbox: ${p.sandbox}

## What you may claim
Every tool call leaves a receipt. After tool calls you will see "[Tool receipts of this run so far …]". Only say you did something if a receipt shows it succeeded. A denied call was refused by policy or by a person: report it, do not try to get around it.
${p.extra ? `\n${p.extra.trim()}\n` : ""}`;
}
