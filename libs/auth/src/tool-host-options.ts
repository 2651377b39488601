import { type LoadedConfig, loadAuthProfiles } from "@mom/config";
import { resolveCredentialRef } from "./secret.js";

/**
 * What the host API of custom tools and integrations is built from: the workspace, the operator's
 * `tools.settings`, and credentials resolved on the host at each use (the sandbox never sees them).
 */
export function toolHostOptions(loaded: LoadedConfig) {
  const { paths, config } = loaded;
  return {
    dataDir: paths.dataDir,
    workspaceDir: paths.workspaceDir,
    settings: config.tools.settings,
    secret: (ref: string) => resolveCredentialRef(ref, paths.dataDir, () => loadAuthProfiles(paths.authProfilesFile).profiles),
  };
}
