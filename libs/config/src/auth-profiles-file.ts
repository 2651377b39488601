import { chmodSync, renameSync, writeFileSync } from "node:fs";
import Type, { type Static } from "typebox";
import { ConfigError } from "./config-error.js";
import { readJsonFile, schemaChecker } from "./json-file.js";
import type { Issue } from "./schema-issues.js";

const closed = { additionalProperties: false } as const;
const instant = (description: string) => Type.Optional(Type.String({ format: "date-time", expected: "an ISO date-time like 2026-01-31T12:00:00Z", description }));

export const AUTH_PROFILE_ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]*$";

/** One credential for one provider (docs/auth.md). */
export const AuthProfile = Type.Object(
  {
    id: Type.String({ pattern: AUTH_PROFILE_ID_PATTERN, expected: "an id of letters, digits, '_', '.', '-' (e.g. work-key)" }),
    provider: Type.String({ minLength: 1, description: "pi-ai provider, e.g. anthropic" }),
    type: Type.Union([Type.Literal("api_key"), Type.Literal("token"), Type.Literal("oauth")], {
      expected: '"api_key", "token" (e.g. from claude setup-token) or "oauth"',
    }),
    secret: Type.String({ minLength: 1, description: 'the key or token: literal, "env:NAME" or "file:PATH" (relative to the data dir)' }),
    expiresAt: instant("After this the profile is skipped"),
    lastUsedAt: instant("Informational; the runners keep the live value in NATS"),
    cooldownUntil: instant("Informational; the runners keep the live cooldowns in NATS"),
  },
  closed,
);
export type AuthProfile = Static<typeof AuthProfile>;

export const AuthProfilesFile = Type.Object({ profiles: Type.Array(AuthProfile) }, closed);
export type AuthProfilesFile = Static<typeof AuthProfilesFile>;

const checkSchema = schemaChecker(AuthProfilesFile);

function duplicateIds(raw: unknown): Issue[] {
  const profiles = (raw as AuthProfilesFile).profiles;
  const seen = new Set<string>();
  const issues: Issue[] = [];
  profiles.forEach((p, i) => {
    if (seen.has(p.id)) issues.push({ path: `/profiles/${i}/id`, message: `duplicate profile id ${JSON.stringify(p.id)}` });
    seen.add(p.id);
  });
  return issues;
}

/** Reads data/auth-profiles.json; a missing file means no profiles. Errors name the file and field. */
export function loadAuthProfiles(file: string, shown = file): AuthProfilesFile {
  const raw = readJsonFile(file, shown, (r) => {
    const issues = checkSchema(r);
    return issues.length ? issues : duplicateIds(r);
  });
  return (raw as AuthProfilesFile | undefined) ?? { profiles: [] };
}

/** Writes the file readable by its owner only (0600), atomically, so a crash never leaves half a file. */
export function saveAuthProfiles(file: string, data: AuthProfilesFile): void {
  const issues = [...checkSchema(data), ...duplicateIds(data)];
  if (issues.length) throw new ConfigError(file, issues);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(data, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}
