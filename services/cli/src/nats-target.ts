import { readFileSync } from "node:fs";
import type { LoadedConfig } from "@mom/config";

/**
 * `mom up` starts its own NATS only when the operator named none: NATS_URL wins, then an explicit
 * nats.url in config.json. (`mom runner`/`mom ingress` always use the configured URL.)
 */
export function explicitNatsUrl(loaded: LoadedConfig, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.NATS_URL) return env.NATS_URL;
  try {
    const raw = JSON.parse(readFileSync(loaded.paths.configFile, "utf8")) as { nats?: { url?: string } };
    return raw.nats?.url;
  } catch {
    return undefined;
  }
}
