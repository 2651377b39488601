import "reflect-metadata";
import { type BusOptions } from "@mom/bus";
import { startJetStreamService } from "@mom/bus/nest";
import { authConfigIssues } from "@mom/auth";
import { ConfigError, loadAuthProfiles, type LoadedConfig } from "@mom/config";
import { ModelCatalog } from "./model-catalog.js";
import type { Logger } from "pino";
import { RunnerModule } from "./runner.module.js";
import { RunnerService } from "./runner.service.js";

export interface StartRunnerOptions {
  loaded: LoadedConfig;
  bus: BusOptions;
  logger: Logger;
  durable?: string;
  /** This replica's id (default: MOM_RUNNER_ID, else host, pid and a random suffix). */
  runnerId?: string;
}

export interface RunningService {
  close(): Promise<void>;
}

/** Boots the agent runner as a Nest microservice on the JetStream transport (no HTTP); ready when this resolves. */
export async function startRunner(o: StartRunnerOptions): Promise<RunningService> {
  // Fails fast with an operator-readable ModelSetupError before anything connects.
  const { profiles } = loadAuthProfiles(o.loaded.paths.authProfilesFile);
  const issues = authConfigIssues(o.loaded.config, profiles);
  if (issues.length) throw new ConfigError(o.loaded.paths.configFile, issues);
  const models = new ModelCatalog(o.loaded, (provider) => profiles.some((p) => p.provider === provider));
  const app = await startJetStreamService(
    RunnerModule.forRoot({ loaded: o.loaded, models, logger: o.logger, durable: o.durable, runnerId: o.runnerId ?? (process.env.MOM_RUNNER_ID || undefined) }, o.bus),
  );
  app.get(RunnerService).logReady();
  return { close: () => app.close() };
}
