/**
 * `claude setup-token` prints a long-lived OAuth token for a Claude subscription. pi-ai treats a
 * key starting with `sk-ant-oat` as such a token (Bearer auth with Claude Code's headers).
 */
const SETUP_TOKEN = /^sk-ant-oat01-[A-Za-z0-9_-]{40,}$/;

/** Undefined when the pasted text looks like a setup token, else what is wrong with it. */
export function setupTokenProblem(token: string): string | undefined {
  const t = token.trim();
  if (SETUP_TOKEN.test(t)) return undefined;
  if (t.startsWith("sk-ant-api")) return "this is an Anthropic API key, not a setup token: use `mom auth add anthropic --api-key`";
  if (!t.startsWith("sk-ant-oat01-")) return "a setup token starts with sk-ant-oat01- (run `claude setup-token` and paste the token it prints)";
  return "the token is cut short or has stray characters (paste the whole line `claude setup-token` printed)";
}
