import { checkModelEndpoint, describeEndpointProblem, diagnoseModelError, ModelSetupError, resolveModel, type ResolvedModel, shownEndpoint } from "@mom/agent";
import { resolveSecret } from "@mom/auth";
import { type AuthProfile, type LoadedConfig, loadAuthProfiles, parseModelRef } from "@mom/config";
import { completeSimple } from "@mariozechner/pi-ai";

export const PROBE_TIMEOUT_MS = 30_000;

/** The key and headers a runner would try first: the provider's first auth profile, else pi's own lookup. */
async function firstCredential(resolved: ResolvedModel, profiles: AuthProfile[], dataDir: string): Promise<{ apiKey?: string; headers?: Record<string, string> }> {
  const { model, modelRegistry } = resolved;
  const profile = profiles.find((p) => p.provider === model.provider);
  const auth = await modelRegistry.getApiKeyAndHeaders(model);
  const apiKey = profile ? resolveSecret(profile.secret, dataDir) : auth.ok ? auth.apiKey : undefined;
  return { ...(apiKey && { apiKey }), ...(auth.ok && auth.headers && { headers: auth.headers }) };
}

/**
 * One tiny real model call (a few tokens out) with the credential a runner would try first: what
 * only the provider can say — endpoint up, key accepted, model known — is checked by asking it.
 * Resolves to undefined when the model answered, else to one line: which endpoint, what failed
 * (refused, DNS, TLS, timeout, 401/403, 404 model) and what to do.
 */
export async function probeModel(resolved: ResolvedModel, profiles: AuthProfile[], dataDir: string, modelsFile?: string): Promise<string | undefined> {
  const { model } = resolved;
  let auth: Awaited<ReturnType<typeof firstCredential>>;
  try {
    auth = await firstCredential(resolved, profiles, dataDir);
  } catch (err) {
    return (err as Error).message;
  }
  const signal = AbortSignal.timeout(PROBE_TIMEOUT_MS);
  let failure: string;
  try {
    const reply = await completeSimple(
      model,
      { messages: [{ role: "user", content: "Reply with the word ok.", timestamp: Date.now() }] },
      { ...auth, maxTokens: 16, maxRetries: 0, signal } as Parameters<typeof completeSimple>[2],
    );
    if (reply.stopReason !== "error" && reply.stopReason !== "aborted") return undefined;
    if (signal.aborted) return `model ${model.provider}/${model.id} at ${shownEndpoint(model.baseUrl)}: no answer within ${PROBE_TIMEOUT_MS / 1000} s — check that the server is up and not overloaded`;
    failure = reply.errorMessage ?? "the call failed";
  } catch (err) {
    failure = (err as Error).message;
  }
  const problem = await diagnoseModelError(model, failure, { ...(modelsFile && { modelsFile }) });
  return problem ? describeEndpointProblem(problem) : `model ${model.provider}/${model.id} at ${shownEndpoint(model.baseUrl)}: ${failure.trim().split("\n")[0]}`;
}

/**
 * The check at `mom up`/`mom runner` start: resolves the configured model and asks its endpoint
 * (no completion, nothing spent; see checkModelEndpoint) whether it can be reached, takes the key
 * and serves the model. Resolves to one line saying what is wrong, or undefined. Never throws.
 */
export async function startupModelCheck(loaded: LoadedConfig): Promise<string | undefined> {
  try {
    const profiles = loadAuthProfiles(loaded.paths.authProfilesFile).profiles;
    const { provider, modelId } = parseModelRef(loaded.config.model);
    const resolved = resolveModel(provider, modelId, loaded.paths, (p) => profiles.some((x) => x.provider === p));
    const auth = await firstCredential(resolved, profiles, loaded.paths.dataDir);
    const problem = await checkModelEndpoint(resolved.model, auth, { modelsFile: loaded.paths.modelsFile });
    return problem ? describeEndpointProblem(problem) : undefined;
  } catch (err) {
    // The runner itself reports setup errors (unknown model, no credentials) as it starts.
    return err instanceof ModelSetupError ? undefined : `model ${loaded.config.model}: the start-up check failed: ${(err as Error).message}`;
  }
}
