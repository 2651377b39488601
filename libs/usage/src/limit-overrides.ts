import { type Bus, existingJsonKv, type JsonKv, kvKey, openJsonKv } from "@mom/bus";
import type { LimitsConfig, SpendBudget } from "@mom/config";
import { SpendLimitOverride, validator } from "@mom/contracts";
import type { Period } from "./periods.js";
import type { Scope } from "./spend-totals.js";

// Spend limits changed at run time (docs/console.md "Spend"): the web console writes one entry per
// budget it changes into the KV bucket <NS>_LIMITS; every runner and the console keep a mirror of
// it, and a changed budget takes the place of config.json's for that scope and period. The bucket
// is made by the runners at start; the console only opens it.

const BUCKET = "LIMITS";
const check = validator(SpendLimitOverride);

/** Whether config.json sets any budget: then the runners follow the ledger, and the console changes budgets. */
export function hasLimits(limits: LimitsConfig): boolean {
  return limits.global !== undefined || Object.keys(limits.adapters ?? {}).length > 0 || Object.keys(limits.channels ?? {}).length > 0;
}

/** The bucket key of one budget: its scope and period (channel ids escaped by kvKey). */
export function limitOverrideKey(scope: Scope, period: Period): string {
  return kvKey(scope.kind, ...(scope.kind === "adapter" ? [scope.adapter] : scope.kind === "channel" ? [scope.channel] : []), period);
}

/** Where a budget lives in config.json, e.g. `limits.channels["cli/local"].day`. */
export function budgetPath(scope: Scope, period: Period): string {
  const base = scope.kind === "global" ? "limits.global" : scope.kind === "adapter" ? `limits.adapters["${scope.adapter}"]` : `limits.channels["${scope.channel}"]`;
  return `${base}.${period}`;
}

/** config.json's limits with the overrides in their place (`cap: null` removes that budget). Pure. */
export function applyLimitOverrides(limits: LimitsConfig, overrides: Iterable<SpendLimitOverride>): LimitsConfig {
  const out: LimitsConfig = structuredClone(limits);
  for (const o of overrides) {
    const s = o.scope;
    let budget: SpendBudget;
    if (s.kind === "global") budget = out.global ??= {};
    else if (s.kind === "adapter") budget = (out.adapters ??= {})[s.adapter] ??= {};
    else budget = (out.channels ??= {})[s.channel] ??= {};
    if (o.cap === null) delete budget[o.period];
    else budget[o.period] = { ...o.cap };
  }
  return out;
}

/**
 * The mirror of the overrides bucket: `effective(limits)` is what a spend check reads (no NATS
 * round trip per model call); an entry that fails the contract is reported and left out.
 */
export class LimitOverrides {
  private readonly mirror = new Map<string, SpendLimitOverride>();
  private watching?: { stop(): void };

  private constructor(
    private readonly kv: JsonKv<unknown>,
    private readonly onChange: (key: string, value: SpendLimitOverride | undefined, problem?: string) => void,
  ) {}

  /**
   * `create`: a runner makes the bucket when it is missing; the console does not (undefined then).
   * Resolves once the bucket's current entries are in the mirror.
   */
  static async open(
    bus: Bus,
    opts: { create: boolean; replicas?: number; onChange?: (key: string, value: SpendLimitOverride | undefined, problem?: string) => void },
  ): Promise<LimitOverrides | undefined> {
    const kv = opts.create ? await openJsonKv<unknown>(bus, { name: BUCKET, ...(opts.replicas !== undefined && { replicas: opts.replicas }) }) : await existingJsonKv<unknown>(bus, BUCKET);
    if (!kv) return undefined;
    const o = new LimitOverrides(kv, opts.onChange ?? (() => {}));
    o.watching = await kv.watch((key, raw) => o.take(key, raw));
    return o;
  }

  private take(key: string, raw: unknown): void {
    if (raw === undefined) {
      this.mirror.delete(key);
      return this.onChange(key, undefined);
    }
    const r = check.check(raw);
    const problem = !r.ok ? r.reason : limitOverrideKey(r.value.scope, r.value.period) !== key ? `its key ${key} does not name its scope and period` : undefined;
    if (problem || !r.ok) {
      this.mirror.delete(key);
      return this.onChange(key, undefined, problem);
    }
    this.mirror.set(key, r.value);
    this.onChange(key, r.value);
  }

  close(): void {
    this.watching?.stop();
  }

  list(): SpendLimitOverride[] {
    return [...this.mirror.values()];
  }

  /** The override in force for one budget, if any. */
  find(scope: Scope, period: Period): SpendLimitOverride | undefined {
    return this.mirror.get(limitOverrideKey(scope, period));
  }

  effective(limits: LimitsConfig): LimitsConfig {
    return this.mirror.size ? applyLimitOverrides(limits, this.mirror.values()) : limits;
  }

  /** Writes one override (the caller has validated it); the mirror has it when this resolves. */
  async set(o: SpendLimitOverride): Promise<void> {
    const key = limitOverrideKey(o.scope, o.period);
    await this.kv.put(key, o);
    this.take(key, o);
  }

  /** Removes an override: config.json's budget applies again. */
  async clear(scope: Scope, period: Period): Promise<void> {
    const key = limitOverrideKey(scope, period);
    await this.kv.delete(key);
    this.take(key, undefined);
  }
}
