import { addReadinessCheck } from "@mom/observability";
import type { Bus } from "./bus.js";

export interface ServiceReadiness {
  /** The service has finished starting: from now on its readiness is the bus's and `extra`'s. */
  started(): void;
  /** The service is stopping: it no longer counts. */
  stop(): void;
}

/**
 * A service's entry in /readyz: "starting" until started(), then not ready while NATS is
 * disconnected or one of its consumers is not bound, or while `extra` (e.g. the platform
 * connection of an ingress) gives a reason.
 */
export function serviceReadiness(name: string, bus: Pick<Bus, "readinessProblem">, extra?: () => string | undefined): ServiceReadiness {
  let up = false;
  const remove = addReadinessCheck(name, () => (up ? (bus.readinessProblem() ?? extra?.()) : "starting"));
  return {
    started: () => void (up = true),
    stop: remove,
  };
}
