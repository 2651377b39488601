import type { StreamKey } from "@mom/contracts";
import type { Logger } from "pino";

/** Retention of one stream, overriding the shared maxAgeMs / maxBytes. */
export interface StreamRetention {
  maxAgeMs?: number;
  maxBytes?: number;
}

/** Limits applied to every mom stream; `provision()` creates or updates the streams to match. */
export interface StreamSettings {
  /** How long messages are kept (default 7 days). */
  maxAgeMs?: number;
  /** JetStream duplicate window for `Nats-Msg-Id` (default 2 minutes; clamped to maxAgeMs). */
  duplicateWindowMs?: number;
  /** Byte limit per stream (default unlimited). */
  maxBytes?: number;
  /** Stream replicas (default 1; use 3 on a clustered NATS). */
  replicas?: number;
  /** Per-stream retention (e.g. receipts kept longer than chat traffic); unset fields use the shared ones. */
  byStream?: Partial<Record<StreamKey, StreamRetention>>;
}

export interface BusOptions {
  /** nats:// URL (or several, comma-separated); callers resolve NATS_URL/config first. */
  url: string;
  /** Connection name shown by the server, e.g. "agent-runner". */
  name: string;
  /** Subject/stream namespace: "mom" (default) gives subjects mom.* and streams MOM_*. */
  namespace?: string;
  logger?: Logger;
  streams?: StreamSettings;
  /** How long `drain()` / `Consumption.stop()` wait for in-flight handlers (default 30 s). */
  drainTimeoutMs?: number;
  /** Pause between reconnect attempts (default 2 s). The bus reconnects forever once connected. */
  reconnectTimeWaitMs?: number;
}

export const DEFAULT_STREAM_SETTINGS: Required<StreamSettings> = {
  maxAgeMs: 7 * 24 * 60 * 60 * 1000,
  duplicateWindowMs: 2 * 60 * 1000,
  maxBytes: -1,
  replicas: 1,
  byStream: {},
};

/** The max age and byte limit a stream gets from these settings (-1 bytes: unlimited). */
export function streamRetention(settings: StreamSettings | undefined, key: StreamKey): Required<StreamRetention> {
  const s = { ...DEFAULT_STREAM_SETTINGS, ...settings };
  const own = s.byStream[key];
  return { maxAgeMs: own?.maxAgeMs ?? s.maxAgeMs, maxBytes: own?.maxBytes ?? s.maxBytes };
}

export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
