import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as lockfile from "proper-lockfile";
import { CommandError } from "./command-error.js";

/** A lock not refreshed for this long belongs to a process that died (kill -9, power loss). */
export const LOCK_STALE_MS = 10_000;

/**
 * One `mom up` per data dir: two would run two nats-servers on one JetStream store (corrupting
 * it) and two terminals on one channel. The lock is a directory refreshed every few seconds
 * (proper-lockfile), so a crashed holder's lock goes stale by itself; the pid beside it only names
 * the holder in the message.
 */
const lockPathOf = (dataDir: string) => join(dataDir, "mom-up.lock");

/** Whether a live process holds the data dir's lock now. */
export function dataDirLocked(dataDir: string): Promise<boolean> {
  return lockfile.check(dataDir, { lockfilePath: lockPathOf(dataDir), stale: LOCK_STALE_MS, realpath: false });
}

export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  mkdirSync(dataDir, { recursive: true });
  const lockPath = lockPathOf(dataDir);
  const pidFile = join(dataDir, "mom-up.pid");
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(dataDir, {
      lockfilePath: lockPath,
      stale: LOCK_STALE_MS,
      update: LOCK_STALE_MS / 2,
      realpath: false,
      // A lock lost while running (the clock jumped, the disk stalled) is reported, not thrown from a timer.
      onCompromised: (err) => process.stderr.write(`mom: the lock on ${dataDir} was lost: ${err.message}\n`),
    });
  } catch (err) {
    if ((err as { code?: string }).code !== "ELOCKED") throw err;
    let holder = "another process";
    try {
      holder = `pid ${readFileSync(pidFile, "utf8").trim()}`;
    } catch {
      // The holder is between taking the lock and writing its pid.
    }
    throw new CommandError(
      `${dataDir} is in use by another \`mom up\` (${holder}): quit that one first, or give this one its own data dir (\`mom up OTHER_DIR\`); a crashed one's lock clears within ${LOCK_STALE_MS / 1000} s`,
    );
  }
  writeFileSync(pidFile, `${process.pid}\n`);
  return async () => {
    rmSync(pidFile, { force: true });
    await release().catch(() => {});
  };
}
