import { AuthStorage } from "@mariozechner/pi-coding-agent";
import { isAbsolute, join } from "node:path";
import { SecretUnavailable } from "./secret.js";

const PI_AUTH_REF = /^pi-auth:(.+)$/;

/** True for an `oauth` profile's `pi-auth:PATH` secret: OAuth credentials in pi's auth.json format. */
export function isPiAuthRef(ref: string): boolean {
  return PI_AUTH_REF.test(ref);
}

/**
 * The access token of the OAuth credentials for `provider` in the pi auth file that `ref`
 * (`pi-auth:PATH`, relative to the data dir) names. pi's AuthStorage does the work: when the
 * token has expired it refreshes it with pi-ai's OAuth helper for the provider, under pi's file
 * lock (so runner replicas sharing the file refresh once), and writes the new tokens back.
 */
export async function oauthAccessToken(ref: string, provider: string, dataDir: string): Promise<string> {
  const m = PI_AUTH_REF.exec(ref);
  if (!m) throw new SecretUnavailable(`${ref} is not a pi-auth:PATH reference`);
  const path = isAbsolute(m[1]!) ? m[1]! : join(dataDir, m[1]!);
  const storage = AuthStorage.create(path);
  // Only the file's OAuth entry counts: pi would otherwise fall back to the environment.
  if (storage.get(provider)?.type !== "oauth") throw new SecretUnavailable(`${path} has no OAuth credentials for ${provider} (log in with pi, or copy pi's auth.json entry)`);
  const token = await storage.getApiKey(provider, { includeFallback: false });
  const failed = storage.drainErrors();
  if (!token) {
    // pi's messages carry the token endpoint and status, never a token.
    // Up to pi's "; body=" part: a token endpoint's answer stays out of logs.
    const why = failed.at(-1)?.message.split("; body=")[0]?.slice(0, 300);
    throw new SecretUnavailable(`the ${provider} OAuth token expired and could not be refreshed${why ? `: ${why}` : ""}`);
  }
  return token;
}
