import { minimatch } from "minimatch";
import type { Risk } from "./tool-contract.js";

/** One layer of tool policy: `allow` narrows to what it matches, `deny` removes; `!x` excludes. */
export interface PolicyLayer {
  allow?: string[];
  deny?: string[];
}

export interface PolicyLayers {
  /** global → adapter → channel → model provider → sandbox; absent layers change nothing. */
  layers: Array<PolicyLayer | undefined>;
  /** Tool ids (globs) whose calls wait for a person's approval. */
  ask?: string[];
  /** Tool ids (globs) that never ask, even destructive custom tools. */
  autoAllow?: string[];
}

export type Decision = "allow" | "ask" | "deny";

export interface DecisionResult {
  decision: Decision;
  reason: string;
}

// A list matches when a positive pattern matches and no negated one does (`!foo*` excludes).
export function matchesList(id: string, patterns: string[] | undefined): boolean {
  if (!patterns?.length) return false;
  const positive = patterns.filter((p) => !p.startsWith("!"));
  const negative = patterns.filter((p) => p.startsWith("!")).map((p) => p.slice(1));
  const glob = (p: string) => minimatch(id, p, { dot: true, nocase: false });
  return (positive.length === 0 || positive.some(glob)) && !negative.some(glob);
}

/**
 * Whether a tool may be called at all: every layer with an `allow` list must allow it (so a later
 * layer can only narrow) and no layer may deny it (deny wins).
 */
export function isAllowed(id: string, p: PolicyLayers): { allowed: boolean; reason: string } {
  for (const [i, layer] of p.layers.entries()) {
    if (!layer) continue;
    if (layer.deny && matchesList(id, layer.deny)) return { allowed: false, reason: `denied by ${LAYER_NAMES[i] ?? `layer ${i}`} policy` };
    if (layer.allow && !matchesList(id, layer.allow)) return { allowed: false, reason: `not allowed by ${LAYER_NAMES[i] ?? `layer ${i}`} policy` };
  }
  return { allowed: true, reason: "allowed" };
}

export const LAYER_NAMES = ["global", "adapter", "channel", "provider", "sandbox"];

/**
 * allow | ask | deny for one call. `ask` when the id matches `ask`, or for destructive custom
 * tools unless `autoAllow` matches them.
 */
export function decide(id: string, risk: Risk, custom: boolean, p: PolicyLayers): DecisionResult {
  const { allowed, reason } = isAllowed(id, p);
  if (!allowed) return { decision: "deny", reason };
  if (matchesList(id, p.ask)) return { decision: "ask", reason: "policy asks for approval" };
  if (custom && risk === "destructive" && !matchesList(id, p.autoAllow)) return { decision: "ask", reason: "destructive custom tool" };
  return { decision: "allow", reason: "allowed" };
}
