import type { BusOptions } from "@mom/bus";
import type { LoadedConfig } from "@mom/config";
import type { Logger } from "pino";

export function busOptions(loaded: LoadedConfig, url: string, name: string, logger: Logger): BusOptions {
  const { nats } = loaded.config;
  return {
    url,
    name,
    namespace: nats.namespace,
    logger,
    streams: {
      maxAgeMs: nats.streams.maxAgeHours * 3_600_000,
      duplicateWindowMs: nats.streams.duplicateWindowSeconds * 1000,
      replicas: nats.streams.replicas,
    },
  };
}
