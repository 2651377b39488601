import type { LoadedConfig } from "@mom/config";
import type { Logger } from "pino";
import type { ModelCatalog } from "./model-catalog.js";

export const RUNNER_OPTIONS = Symbol("RUNNER_OPTIONS");

export interface RunnerOptions {
  loaded: LoadedConfig;
  models: ModelCatalog;
  logger: Logger;
  /** Durable consumer name of the discovery; replicas of one deployment share it. */
  durable?: string;
  /** This replica's id in the cluster (default: host, pid and a random suffix). */
  runnerId?: string;
}

/** The discovery's durable on MOM_IN. */
export function discoveryDurable(o: RunnerOptions): string {
  return o.durable ?? "agent-runner";
}
