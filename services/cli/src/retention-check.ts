import { Bus, STREAM_TOKENS, streamRetention, type StreamSettings } from "@mom/bus";
import { createLogger, type LoadedConfig } from "@mom/config";
import type { StreamKey } from "@mom/contracts";
import { formatFileSize } from "@mom/store";
import { streamSettings } from "@mom/bus";
import type { Check } from "./doctor.js";

const HOUR_MS = 3_600_000;

function age(ms: number): string {
  if (ms % (24 * HOUR_MS) === 0) return `${ms / (24 * HOUR_MS)}d`;
  if (ms % HOUR_MS === 0) return `${ms / HOUR_MS}h`;
  return `${Math.round(ms / 60_000)}m`;
}

function limits(maxAgeMs: number, maxBytes: number): string {
  return `${age(maxAgeMs)}, ${maxBytes > 0 ? formatFileSize(maxBytes) : "no size limit"}`;
}

/**
 * How long each stream keeps its messages as configured, and — when NATS is reachable — what the
 * server holds now. A stream whose limits differ from config.json is applied by the next service
 * that starts (every service provisions the streams).
 */
export async function checkRetention(loaded: LoadedConfig, url: string | undefined): Promise<Check> {
  const settings: StreamSettings = streamSettings(loaded.config.nats.streams);
  const keys = Object.keys(STREAM_TOKENS) as StreamKey[];
  if (!url) {
    const wanted = keys.map((k) => `${k} ${limits(streamRetention(settings, k).maxAgeMs, streamRetention(settings, k).maxBytes)}`);
    return { name: "retention", ok: true, optional: true, detail: `${wanted.join("; ")} (applied when the services start)` };
  }
  let bus: Bus | undefined;
  try {
    bus = await Bus.connect({ url, name: "mom-doctor", namespace: loaded.config.nats.namespace, logger: createLogger("mom-doctor", { level: "silent" }) });
    const parts: string[] = [];
    let pending = false;
    for (const key of keys) {
      const want = streamRetention(settings, key);
      const name = bus.subjects.stream(key);
      const have = await bus.streamSummary(key);
      if (!have) {
        parts.push(`${name} ${limits(want.maxAgeMs, want.maxBytes)} (not created yet)`);
        continue;
      }
      const differs = have.maxAgeMs !== want.maxAgeMs || have.maxBytes !== want.maxBytes;
      pending ||= differs;
      const oldest = have.firstTs ? `, oldest ${new Date(have.firstTs).toISOString()}` : "";
      const change = differs ? ` — server has ${limits(have.maxAgeMs, have.maxBytes)}` : "";
      parts.push(`${name} ${limits(want.maxAgeMs, want.maxBytes)}${change} (${have.messages} messages, ${formatFileSize(have.bytes)}${oldest})`);
    }
    const note = pending ? "; the next service to start applies config.json" : "";
    return { name: "retention", ok: true, optional: true, detail: `${parts.join("; ")}${note}` };
  } catch (err) {
    return { name: "retention", ok: false, optional: true, detail: `cannot read the streams: ${(err as Error).message}` };
  } finally {
    await bus?.drain().catch(() => {});
  }
}
