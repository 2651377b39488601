import { readFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";

const ENV_REF = /^env:([A-Za-z_][A-Za-z0-9_]*)$/;
const FILE_REF = /^file:(.+)$/;
const PI_AUTH_REF = /^pi-auth:(.+)$/;

/** Thrown when a profile's secret cannot be read; the message names the reference, never a value. */
export class SecretUnavailable extends Error {
  override name = "SecretUnavailable";
}

/** A profile's secret: literal, `env:NAME`, or `file:PATH` (relative to the data dir), read at each use. */
export function resolveSecret(ref: string, dataDir: string, env: NodeJS.ProcessEnv = process.env): string {
  if (PI_AUTH_REF.test(ref)) throw new SecretUnavailable(`${ref}: a pi-auth: file holds OAuth credentials and is only for profiles of type "oauth"`);
  const e = ENV_REF.exec(ref);
  if (e) {
    const value = env[e[1]!];
    if (!value) throw new SecretUnavailable(`environment variable ${e[1]} is not set`);
    return value.trim();
  }
  const f = FILE_REF.exec(ref);
  if (f) {
    const path = isAbsolute(f[1]!) ? f[1]! : join(dataDir, f[1]!);
    let text: string;
    try {
      text = readFileSync(path, "utf8").trim();
    } catch (err) {
      throw new SecretUnavailable(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    if (!text) throw new SecretUnavailable(`${path} is empty`);
    return text;
  }
  return ref;
}

/** True when the stored value is a reference (shown as is) rather than the secret itself. */
export function isSecretRef(ref: string): boolean {
  return ENV_REF.test(ref) || FILE_REF.test(ref) || PI_AUTH_REF.test(ref);
}

/**
 * What `mom auth list` shows: references as written; a literal as its well-known prefix (e.g.
 * `sk-ant-oat01-`) and last four characters, never more than that.
 */
export function maskSecret(ref: string): string {
  if (isSecretRef(ref)) return ref;
  const prefix = KNOWN_PREFIX.exec(ref)?.[0] ?? "";
  if (ref.length < prefix.length + 16) return `${prefix}…`;
  return `${prefix}…${ref.slice(-4)}`;
}

// Fixed, public parts of common key formats; anything after them may be key material.
const KNOWN_PREFIX = /^(?:sk-ant-(?:api|oat|admin)\d\d-|sk-proj-|sk-or-v1-|sk-|xai-|gsk_|AIza)/;

const PROFILE_REF = /^profile:(.+)$/;

/**
 * A credential reference as integrations write them (config.json `tools.settings`): `env:NAME`,
 * `file:PATH` (relative to the data dir) or `profile:<id>` (that auth profile's secret, read from
 * the profiles file at each use). A bare string is refused: settings name where a secret lives,
 * never hold it.
 */
export function resolveCredentialRef(ref: string, dataDir: string, profiles: () => ReadonlyArray<{ id: string; secret: string }>, env: NodeJS.ProcessEnv = process.env): string {
  const p = PROFILE_REF.exec(ref);
  if (p) {
    const profile = profiles().find((x) => x.id === p[1]);
    if (!profile) throw new SecretUnavailable(`${ref}: no auth profile ${JSON.stringify(p[1])} in auth-profiles.json`);
    return resolveSecret(profile.secret, dataDir, env);
  }
  if (!ENV_REF.test(ref) && !FILE_REF.test(ref)) throw new SecretUnavailable(`a credential must be a reference (env:NAME, file:PATH or profile:<id>), not a literal`);
  return resolveSecret(ref, dataDir, env);
}
