import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { LoadedConfig } from "@mom/config";
import { dataDirLocked, lockDataDir } from "./data-lock.js";
import { startLocalNats } from "./local-nats.js";

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

/** Where a running `mom up` tells other commands (replay, tail) the address of its own NATS. */
const upUrlFile = (loaded: LoadedConfig) => join(loaded.paths.dataDir, "nats", "url");

export function announceLocalNats(loaded: LoadedConfig, url: string): () => void {
  writeFileSync(upUrlFile(loaded), `${url}\n`);
  return () => rmSync(upUrlFile(loaded), { force: true });
}

/** The address of the NATS a live `mom up` on this data dir started, if one runs now. */
export async function runningUpNats(loaded: LoadedConfig): Promise<string | undefined> {
  // A file left by a `mom up` that was killed names a server that is gone: only a live holder's counts.
  if (!existsSync(upUrlFile(loaded)) || !(await dataDirLocked(loaded.paths.dataDir))) return undefined;
  try {
    return readFileSync(upUrlFile(loaded), "utf8").trim() || undefined;
  } catch {
    return undefined; // that `mom up` quit just now
  }
}

export interface NatsTarget {
  url: string;
  /**
   * Where the URL came from: NATS_URL or config.json's nats.url, the running `mom up`'s own server,
   * a server started on the store a stopped `mom up` left, or the built-in default (nothing named it).
   */
  source: "named" | "mom up" | "store" | "default";
  /** Stops what was started to reach it (a local nats-server on the data dir's store). */
  close(): Promise<void>;
}

/**
 * The NATS that holds this data dir's traffic, for commands that read it: the one named
 * (NATS_URL, config.json); else the one a running `mom up` started; else, when `mom up` left a
 * store here and `startStore` allows it, a nats-server on that store for as long as the command
 * runs (the data dir is locked meanwhile, so no `mom up` starts a second server on it); else the
 * configured default.
 */
export async function natsTargetFor(loaded: LoadedConfig, o: { startStore?: boolean } = {}): Promise<NatsTarget> {
  const named = explicitNatsUrl(loaded);
  if (named) return { url: named, source: "named", close: async () => {} };
  const up = await runningUpNats(loaded);
  if (up) return { url: up, source: "mom up", close: async () => {} };
  if ((o.startStore ?? true) && existsSync(join(loaded.paths.dataDir, "nats", "jetstream"))) {
    const unlock = await lockDataDir(loaded.paths.dataDir);
    try {
      const nats = await startLocalNats(loaded.paths.dataDir);
      return { url: nats.url, source: "store", close: async () => (await nats.stop(), await unlock()) };
    } catch (err) {
      await unlock();
      throw err;
    }
  }
  return { url: loaded.config.nats.url, source: "default", close: async () => {} };
}
