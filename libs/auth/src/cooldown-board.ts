import { type Bus, type JsonKv, kvKey, openJsonKv } from "@mom/bus";
import { type AuthFailureReason, cooldownMs } from "./auth-failure.js";

/** One credential's state, shared by every runner replica. */
export interface CredentialState {
  cooldownUntil?: string;
  reason?: AuthFailureReason;
  /** Failures in a row; a failure more than an hour after the last cooldown ended starts again at 1. */
  failures: number;
  lastUsedAt?: string;
}

const FORGET_AFTER_MS = 3600_000;

/**
 * Cooldowns of credentials in a NATS KV bucket (`<NS>_AUTH_COOLDOWNS`), keyed by provider and
 * credential id, so one replica's 429 spares the others. Holds no secret: ids and times only.
 */
export class CooldownBoard {
  private constructor(private readonly kv: JsonKv<CredentialState>) {}

  static async open(bus: Bus, replicas?: number): Promise<CooldownBoard> {
    return new CooldownBoard(await openJsonKv<CredentialState>(bus, { name: "AUTH_COOLDOWNS", ttlMs: 7 * 24 * 3600_000, ...(replicas !== undefined && { replicas }) }));
  }

  /** When the credential may be used again (ms since epoch), or undefined when it may now. */
  async coolingUntil(provider: string, id: string, now = Date.now()): Promise<number | undefined> {
    const s = await this.kv.get(kvKey(provider, id));
    const until = s?.cooldownUntil ? Date.parse(s.cooldownUntil) : undefined;
    return until !== undefined && until > now ? until : undefined;
  }

  /** Sets the credential aside; returns until when. */
  async coolDown(provider: string, id: string, reason: AuthFailureReason, retryAfterMs?: number, now = Date.now()): Promise<number> {
    const key = kvKey(provider, id);
    const prev = await this.kv.get(key);
    const lastEnd = prev?.cooldownUntil ? Date.parse(prev.cooldownUntil) : undefined;
    const failures = lastEnd !== undefined && now - lastEnd < FORGET_AFTER_MS ? prev!.failures + 1 : 1;
    const until = now + cooldownMs(reason, failures, retryAfterMs);
    await this.kv.put(key, { ...prev, cooldownUntil: new Date(until).toISOString(), reason, failures });
    return until;
  }

  async markUsed(provider: string, id: string, now = Date.now()): Promise<void> {
    const key = kvKey(provider, id);
    const prev = await this.kv.get(key);
    await this.kv.put(key, { failures: 0, ...prev, lastUsedAt: new Date(now).toISOString() });
  }

  async state(provider: string, id: string): Promise<CredentialState | undefined> {
    return this.kv.get(kvKey(provider, id));
  }

  /** Ends a cooldown by hand (`mom auth` after fixing a key). */
  async clear(provider: string, id: string): Promise<void> {
    await this.kv.delete(kvKey(provider, id));
  }
}
