import { retryTransient } from "./transient.js";
import type { StreamKey, Subjects } from "@mom/contracts";
import {
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
  type StreamInfo,
} from "@nats-io/jetstream";
import { nanos } from "@nats-io/nats-core";
import type { Logger } from "pino";
import { DEFAULT_STREAM_SETTINGS, type StreamSettings, streamRetention } from "./options.js";
import { isPermissionDenied } from "./permission.js";

/** Stream key -> the subject token its wildcard covers. */
export const STREAM_TOKENS: Record<StreamKey, string> = {
  IN: "in",
  OUT: "out",
  CTL: "ctl",
  RECEIPTS: "receipts",
  DLQ: "dlq",
};

export function streamConfigs(subjects: Subjects, settings: StreamSettings = {}): StreamConfig[] {
  const s = { ...DEFAULT_STREAM_SETTINGS, ...settings };
  return (Object.keys(STREAM_TOKENS) as StreamKey[]).map((key) => {
    const { maxAgeMs, maxBytes } = streamRetention(settings, key);
    return {
      name: subjects.stream(key),
      subjects: [`${subjects.namespace}.${STREAM_TOKENS[key]}.>`],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      max_age: nanos(maxAgeMs),
      duplicate_window: nanos(Math.min(s.duplicateWindowMs, maxAgeMs)),
      max_bytes: maxBytes,
      num_replicas: s.replicas,
    } as StreamConfig;
  });
}

/** JetStream API error: "stream name already in use with a different configuration". */
export const STREAM_NAME_IN_USE = 10058;
/** "subjects overlap with an existing stream": also what a racing creator of the same stream gets. */
const SUBJECTS_OVERLAP = 10065;

function isApiError(err: unknown, code?: number): err is JetStreamApiError {
  return err instanceof JetStreamApiError && (code === undefined || err.code === code);
}

/** Fields `provision()` owns; anything else an operator set on the stream is left alone. */
function differs(have: StreamConfig, want: StreamConfig): string[] {
  const changed: string[] = [];
  if (JSON.stringify([...(have.subjects ?? [])].sort()) !== JSON.stringify([...want.subjects].sort())) changed.push("subjects");
  for (const f of ["max_age", "duplicate_window", "max_bytes", "num_replicas", "discard"] as const) {
    if (have[f] !== want[f]) changed.push(f);
  }
  return changed;
}

export async function ensureStream(jsm: JetStreamManager, want: StreamConfig, logger: Logger): Promise<void> {
  let info: StreamInfo | undefined;
  try {
    info = await jsm.streams.info(want.name);
  } catch (err) {
    if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
  }
  if (!info) {
    try {
      await jsm.streams.add(want);
      logger.info({ stream: want.name, subjects: want.subjects }, "stream created");
      return;
    } catch (err) {
      // Another service created it first (same or other settings): fall through to the update.
      // A different stream owning these subjects is a real conflict and keeps its error.
      if (!isApiError(err, STREAM_NAME_IN_USE) && !isApiError(err, SUBJECTS_OVERLAP)) throw err;
      info = await jsm.streams.info(want.name).catch((e: unknown) => {
        throw isApiError(e, JetStreamApiCodes.StreamNotFound) ? new Error(`cannot create stream ${want.name}: another stream already takes ${want.subjects.join(", ")}`, { cause: err }) : e;
      });
    }
  }
  const have = info.config;
  if (have.storage !== want.storage || have.retention !== want.retention) {
    throw new Error(
      `stream ${want.name} exists with storage=${have.storage} retention=${have.retention}; ` +
        `mom needs storage=${want.storage} retention=${want.retention} (these cannot be updated: delete the stream)`,
    );
  }
  const changed = differs(have, want);
  if (changed.length === 0) return;
  try {
    await jsm.streams.update(want.name, {
      subjects: want.subjects,
      max_age: want.max_age,
      duplicate_window: want.duplicate_window,
      max_bytes: want.max_bytes,
      num_replicas: want.num_replicas,
      discard: want.discard,
    });
  } catch (err) {
    if (!isPermissionDenied(err)) throw err;
    warnNotUpdated(logger, want.name, changed);
    return;
  }
  logger.info({ stream: want.name, changed }, "stream updated");
}

/**
 * With deploy/nats/auth.conf no service may update a stream (an update could route messages onto
 * the control subjects), so a changed setting stays for an admin to apply; the stream works as it is.
 */
export function warnNotUpdated(logger: Logger, stream: string, changed: string[]): void {
  logger.warn({ stream, changed }, "stream settings differ from config.json, but this NATS user may not change streams: apply them as a NATS admin (docs/bus.md)");
}

/** Creates or updates every mom stream. Idempotent and safe to run from several services at once. */
export async function provisionStreams(
  jsm: JetStreamManager,
  subjects: Subjects,
  settings: StreamSettings | undefined,
  logger: Logger,
): Promise<void> {
  await Promise.all(
    streamConfigs(subjects, settings).map(async (cfg) => {
      try {
        await retryTransient(`provisioning stream ${cfg.name}`, () => ensureStream(jsm, cfg, logger), logger);
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        throw new Error(`cannot provision stream ${cfg.name}: ${reason}`, { cause: err });
      }
    }),
  );
}
