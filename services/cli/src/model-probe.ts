import type { ResolvedModel } from "@mom/agent";
import { resolveSecret } from "@mom/auth";
import type { AuthProfile } from "@mom/config";
import { completeSimple } from "@mariozechner/pi-ai";

export const PROBE_TIMEOUT_MS = 30_000;

/**
 * One tiny real model call (a few tokens out) with the credential a runner would try first: what
 * only the provider can say — endpoint up, key accepted, model known — is checked by asking it.
 * Resolves to undefined when the model answered, else to what went wrong.
 */
export async function probeModel(resolved: ResolvedModel, profiles: AuthProfile[], dataDir: string): Promise<string | undefined> {
  const { model, modelRegistry } = resolved;
  const profile = profiles.find((p) => p.provider === model.provider);
  const auth = await modelRegistry.getApiKeyAndHeaders(model);
  let apiKey: string | undefined;
  try {
    apiKey = profile ? resolveSecret(profile.secret, dataDir) : auth.ok ? auth.apiKey : undefined;
  } catch (err) {
    return (err as Error).message;
  }
  const signal = AbortSignal.timeout(PROBE_TIMEOUT_MS);
  try {
    const reply = await completeSimple(
      model,
      { messages: [{ role: "user", content: "Reply with the word ok.", timestamp: Date.now() }] },
      { ...(apiKey && { apiKey }), ...(auth.ok && auth.headers && { headers: auth.headers }), maxTokens: 16, maxRetries: 0, signal } as Parameters<typeof completeSimple>[2],
    );
    if (reply.stopReason === "error" || reply.stopReason === "aborted") {
      return signal.aborted ? `no answer within ${PROBE_TIMEOUT_MS / 1000} s` : (reply.errorMessage ?? "the call failed");
    }
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
