/**
 * What /readyz answers: every service of this process registers a check that returns why it is
 * not ready (one line) or undefined. A process whose services have not started yet is not ready.
 */
export type ReadinessCheck = () => string | undefined;

const checks = new Map<symbol, { name: string; check: ReadinessCheck }>();

/** Registers a check; call the returned function when the service stops. */
export function addReadinessCheck(name: string, check: ReadinessCheck): () => void {
  const key = Symbol(name);
  checks.set(key, { name, check });
  return () => void checks.delete(key);
}

const warnings = new Map<symbol, string>();

/**
 * A warning /readyz shows while the process is ready (`"warnings": [...]` next to `"status":
 * "ready"`), e.g. "NO CHANNEL ISOLATION" from a runner whose operator chose the host sandbox.
 * Call the returned function to take it back.
 */
export function addReadinessWarning(name: string, warning: string): () => void {
  const key = Symbol(name);
  warnings.set(key, `${name}: ${warning}`);
  return () => void warnings.delete(key);
}

export function readinessWarnings(): string[] {
  return [...warnings.values()];
}

export function readiness(): { ready: true } | { ready: false; reason: string } {
  if (checks.size === 0) return { ready: false, reason: "no service has started" };
  for (const { name, check } of checks.values()) {
    let reason: string | undefined;
    try {
      reason = check();
    } catch (err) {
      reason = `readiness check failed: ${(err as Error).message}`;
    }
    if (reason) return { ready: false, reason: `${name}: ${reason}` };
  }
  return { ready: true };
}
