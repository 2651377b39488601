import type { KV, KvWatchEntry } from "@mom/bus";
import type { Logger } from "pino";

/**
 * Watches every key of a bucket: `onEntry` gets each key's current entry, then each change.
 * Resolves (with the watch, to stop it) once the current entries have all been seen.
 */
export async function watchBucket(kv: KV, onEntry: (e: KvWatchEntry) => void, log: Logger): Promise<{ stop(): void }> {
  let ready!: () => void;
  const loaded = new Promise<void>((r) => (ready = r));
  const iter = await kv.watch();
  void (async () => {
    for await (const e of iter) {
      onEntry(e);
      if (e.delta === 0) ready();
    }
  })().catch((err) => log.warn({ err }, "bucket watch ended"));
  // An empty bucket has no last entry to mark the end of the current ones.
  if ((await kv.status()).values === 0) ready();
  await loaded;
  return iter;
}

/** The JSON in a KV value, or undefined when it is not JSON. */
export function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
