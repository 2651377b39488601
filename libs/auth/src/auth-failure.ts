/** What a provider said when it refused a call. */
export interface ProviderRefusal {
  /** HTTP status, when known. */
  status?: number;
  /** `retry-after` in ms, when the provider sent one. */
  retryAfterMs?: number;
  message: string;
}

/** Why a credential is set aside: too many requests, not accepted, or out of money. */
export type AuthFailureReason = "rate_limit" | "auth" | "billing";

const BILLING = /billing|credit balance|insufficient.?(funds|quota|credit|balance)|payment required|quota exceeded|exceeded your current quota/i;
const RATE_LIMIT = /rate.?limit|too many requests|overloaded.*rate/i;

/** The refusals that rotate to another credential; anything else (5xx, bad request) is not the credential's fault. */
export function classifyRefusal(r: ProviderRefusal): AuthFailureReason | undefined {
  const status = r.status ?? statusFromMessage(r.message);
  if (status === 402 || BILLING.test(r.message)) return "billing";
  if (status === 429 || (status === undefined && RATE_LIMIT.test(r.message))) return "rate_limit";
  if (status === 401 || status === 403) return "auth";
  return undefined;
}

/** The OpenAI and Anthropic SDKs word an HTTP error as "<status> <message>". */
export function statusFromMessage(message: string): number | undefined {
  const m = /^(\d{3})\b/.exec(message.trim());
  return m ? Number(m[1]) : undefined;
}

/** First cooldown and cap per reason; each further failure in a row doubles it. */
export const COOLDOWN_POLICY: Record<AuthFailureReason, { firstMs: number; maxMs: number }> = {
  rate_limit: { firstMs: 15_000, maxMs: 10 * 60_000 },
  auth: { firstMs: 10 * 60_000, maxMs: 6 * 3600_000 },
  billing: { firstMs: 3600_000, maxMs: 24 * 3600_000 },
};

/**
 * How long a credential rests: the provider's `retry-after` when it sent one, else exponential
 * backoff by failures in a row with ±20% jitter, so replicas that hit the same limit do not all
 * come back in the same second.
 */
export function cooldownMs(reason: AuthFailureReason, failuresInARow: number, retryAfterMs?: number, random: () => number = Math.random): number {
  if (retryAfterMs !== undefined && retryAfterMs > 0) return retryAfterMs;
  const { firstMs, maxMs } = COOLDOWN_POLICY[reason];
  const base = Math.min(maxMs, firstMs * 2 ** Math.max(0, failuresInARow - 1));
  return Math.round(base * (0.8 + 0.4 * random()));
}

/** `retry-after` is seconds or an HTTP date. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, Math.round(seconds * 1000));
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
