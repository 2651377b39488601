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
  /** Every credential's state as the bucket's watch last said: a model call reads this, not NATS. */
  private readonly mirror = new Map<string, CredentialState>();
  private watching?: { stop(): void };
  /** When this replica last recorded a use of each credential. */
  private readonly usedAt = new Map<string, number>();

  private constructor(private readonly kv: JsonKv<CredentialState>) {}

  static async open(bus: Bus, replicas?: number): Promise<CooldownBoard> {
    const board = new CooldownBoard(await openJsonKv<CredentialState>(bus, { name: "AUTH_COOLDOWNS", ttlMs: 7 * 24 * 3600_000, ...(replicas !== undefined && { replicas }) }));
    board.watching = await board.kv.watch((key, value) => (value ? board.mirror.set(key, value) : board.mirror.delete(key)));
    return board;
  }

  close(): void {
    this.watching?.stop();
  }

  /** When the credential may be used again (ms since epoch), or undefined when it may now. */
  async coolingUntil(provider: string, id: string, now = Date.now()): Promise<number | undefined> {
    const s = this.mirror.get(kvKey(provider, id));
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
    const next = { ...prev, cooldownUntil: new Date(until).toISOString(), reason, failures };
    await this.kv.put(key, next);
    this.mirror.set(key, next); // this replica's next pick must not wait for the watch
    return until;
  }

  /** Records when a credential was last used (for `mom auth list`), at most once a minute per credential and replica. */
  async markUsed(provider: string, id: string, now = Date.now()): Promise<void> {
    const key = kvKey(provider, id);
    if (now - (this.usedAt.get(key) ?? 0) < 60_000) return;
    this.usedAt.set(key, now);
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
