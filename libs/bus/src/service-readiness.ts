import { addReadinessCheck } from "@mom/observability";
import type { Bus } from "./bus.js";

/**
 * Registers a started service in /readyz: not ready while NATS is disconnected or one of its
 * consumers is not bound, or while `extra` (e.g. an ingress's platform connection) gives a reason.
 * Call it once the service has started; call the returned function when it stops.
 */
export function serviceReadiness(name: string, bus: Pick<Bus, "readinessProblem">, extra?: () => string | undefined): () => void {
  return addReadinessCheck(name, () => bus.readinessProblem() ?? extra?.());
}
