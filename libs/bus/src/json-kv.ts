import type { KV } from "@nats-io/kv";
import type { Bus } from "./bus.js";

/** A JetStream KV bucket holding JSON values; what services use for small shared state. */
export interface JsonKv<T> {
  readonly bucket: string;
  get(key: string): Promise<T | undefined>;
  put(key: string, value: T): Promise<void>;
  delete(key: string): Promise<void>;
  /** Every live key and its value. */
  entries(): Promise<Array<[string, T]>>;
  /** Calls `onChange` with every key's current value (resolving once it has), then with each change (undefined: deleted). */
  watch(onChange: (key: string, value: T | undefined) => void): Promise<{ stop(): void }>;
}

export interface JsonKvOptions {
  /** Bucket suffix; the bucket is `<NAMESPACE>_<name>`, e.g. `MOM_AUTH_COOLDOWNS`. */
  name: string;
  /** Keys older than this are removed by the server. */
  ttlMs?: number;
  replicas?: number;
}

const KEY_CHAR = /[A-Za-z0-9_\-/.]/;
/** A part that needs no escaping (a model call looks up its credential's key every time). */
const PLAIN_PART = /^[A-Za-z0-9_\-/]*$/;

/**
 * A KV key from free text: characters KV keys may not hold become `=XX` (hex), so names from
 * config files (providers, channel ids) are always valid and never collide.
 */
export function kvKey(...parts: string[]): string {
  return parts
    .map((p) => (PLAIN_PART.test(p) ? p : [...p].map((c) => (KEY_CHAR.test(c) && c !== "." ? c : [...Buffer.from(c)].map((b) => `=${b.toString(16).padStart(2, "0")}`).join(""))).join("")))
    .join(".");
}

/** `<NAMESPACE>_<suffix>`: how streams and buckets of a namespace are named (mom-dev -> MOM_DEV_…). */
export function namespacedName(bus: Bus, suffix: string): string {
  return `${bus.subjects.namespace.toUpperCase().replace(/-/g, "_")}_${suffix}`;
}

/** Creates the bucket when it does not exist yet (safe to race), else opens it. */
export async function openJsonKv<T>(bus: Bus, opts: JsonKvOptions): Promise<JsonKv<T>> {
  const bucket = namespacedName(bus, opts.name);
  return jsonKv<T>(bucket, await bus.keyValue(bucket, { ...(opts.ttlMs !== undefined && { ttlMs: opts.ttlMs }), ...(opts.replicas !== undefined && { replicas: opts.replicas }) }));
}

/** Opens the bucket only when another service has made it (a reader that may create nothing); undefined when it is not there. */
export async function existingJsonKv<T>(bus: Bus, name: string): Promise<JsonKv<T> | undefined> {
  const bucket = namespacedName(bus, name);
  const kv = await bus.existingKeyValue(bucket);
  return kv ? jsonKv<T>(bucket, kv) : undefined;
}

function jsonKv<T>(bucket: string, kv: KV): JsonKv<T> {
  const get = async (key: string): Promise<T | undefined> => {
    const e = await kv.get(key);
    if (!e || e.operation !== "PUT" || e.length === 0) return undefined;
    return e.json<T>();
  };
  return {
    bucket,
    get,
    async put(key, value) {
      await kv.put(key, JSON.stringify(value));
    },
    async delete(key) {
      await kv.delete(key);
    },
    async watch(onChange) {
      let ready!: () => void;
      const loaded = new Promise<void>((r) => (ready = r));
      const iter = await kv.watch();
      void (async () => {
        for await (const e of iter) {
          let value: T | undefined;
          if (e.operation === "PUT" && e.length > 0) {
            try {
              value = e.json<T>();
            } catch {
              value = undefined;
            }
          }
          onChange(e.key, value);
          if (e.delta === 0) ready();
        }
      })().catch(() => {});
      if ((await kv.status()).values === 0) ready();
      await loaded;
      return iter;
    },
    async entries() {
      const out: Array<[string, T]> = [];
      const keys = await kv.keys();
      const names: string[] = [];
      for await (const k of keys) names.push(k);
      for (const k of names) {
        const v = await get(k);
        if (v !== undefined) out.push([k, v]);
      }
      return out;
    },
  };
}
