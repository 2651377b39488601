import type { ResolvedModel } from "@mom/agent";
import type { LoadedConfig } from "@mom/config";
import type { Logger } from "pino";

export const RUNNER_OPTIONS = Symbol("RUNNER_OPTIONS");

export interface RunnerOptions {
  loaded: LoadedConfig;
  resolved: ResolvedModel;
  logger: Logger;
  /** Durable consumer name; replicas of one deployment share it. */
  durable?: string;
}
