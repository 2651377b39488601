import { PermissionViolationError } from "@nats-io/nats-core";

/** True when NATS refused the request because the connection's user may not publish its subject. */
export function isPermissionDenied(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof PermissionViolationError) return true;
  }
  return false;
}
