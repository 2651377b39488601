import type { BusOptions, StreamSettings } from "./options.js";
import type { LoadedConfig, MomConfig } from "@mom/config";
import type { StreamKey } from "@mom/contracts";
import type { Logger } from "pino";

export function busOptions(loaded: LoadedConfig, url: string, name: string, logger: Logger): BusOptions {
  const { nats } = loaded.config;
  return {
    url,
    name,
    namespace: nats.namespace,
    logger,
    streams: streamSettings(nats.streams),
  };
}

const HOUR_MS = 3_600_000;

/** config.json `nats.streams` as the bus applies it to the streams it provisions. */
export function streamSettings(streams: MomConfig["nats"]["streams"]): StreamSettings {
  const byStream: NonNullable<StreamSettings["byStream"]> = {};
  for (const [key, r] of Object.entries(streams.byStream ?? {})) {
    if (!r) continue;
    byStream[key.toUpperCase() as StreamKey] = {
      ...(r.maxAgeHours !== undefined && { maxAgeMs: r.maxAgeHours * HOUR_MS }),
      ...(r.maxBytes !== undefined && { maxBytes: r.maxBytes }),
    };
  }
  return {
    maxAgeMs: streams.maxAgeHours * HOUR_MS,
    duplicateWindowMs: streams.duplicateWindowSeconds * 1000,
    replicas: streams.replicas,
    ...(streams.maxBytes !== undefined && { maxBytes: streams.maxBytes }),
    byStream,
  };
}
