// config.json `tools.settings.github`, read at each call (so a call made before the operator set it
// says what to set), and the one place that decides which repo a call may touch.
import Type, { type Static } from "typebox";
import { type CustomToolApi, IntegrationSettingsError, integrationSettings } from "@mom/tools";

/** "owner/name" as GitHub spells them: letters, digits, `-`, `_` and `.`. */
export const REPO_PATTERN = "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$";
const CREDENTIAL_REF = /^(env:[A-Za-z_][A-Za-z0-9_]*|file:.+|profile:.+)$/;

export const GithubSettingsSchema = Type.Object(
  {
    token: Type.String({ minLength: 1, description: "Where the token lives: env:NAME, file:PATH (relative to the data dir) or profile:<id>; never the token itself" }),
    baseUrl: Type.String({ default: "https://api.github.com", pattern: "^https?://[^\\s]+$", description: "The REST API's root; GitHub Enterprise Server: https://<host>/api/v3" }),
    repo: Type.Optional(Type.String({ pattern: REPO_PATTERN, description: "The repo a call without `repo` works on" })),
    repos: Type.Optional(Type.Array(Type.String({ pattern: REPO_PATTERN }), { minItems: 1, description: "The only repos calls may touch; unset: any repo the token can reach" })),
    allowMentions: Type.Boolean({ default: false, description: "Let @-mentions in comments and issue bodies notify people (off: they are shown but notify nobody)" }),
  },
  { additionalProperties: false },
);

export type GithubSettings = Static<typeof GithubSettingsSchema>;

/** A repo a call may touch, as the operator or the model spelled it. */
export interface RepoRef {
  owner: string;
  name: string;
  /** "owner/name" */
  full: string;
}

export function loadSettings(api: Pick<CustomToolApi, "settings">): GithubSettings {
  const s = integrationSettings(api, "github", GithubSettingsSchema);
  if (!CREDENTIAL_REF.test(s.token)) {
    throw new IntegrationSettingsError(
      "config.json tools.settings.github.token must say where the token lives — env:NAME, file:PATH or profile:<id> — not hold the token itself",
    );
  }
  for (const [field, value] of [["repo", s.repo], ...(s.repos ?? []).map((r, i) => [`repos.${i}`, r])] as Array<[string, string | undefined]>) {
    if (value !== undefined && !parseRepo(value)) throw new IntegrationSettingsError(`config.json tools.settings.github.${field}: ${JSON.stringify(value)} is not "owner/name"`);
  }
  if (s.repo && s.repos && !isAllowed(s, s.repo)) {
    throw new IntegrationSettingsError(`config.json tools.settings.github.repo ${s.repo} is not in tools.settings.github.repos (${s.repos.join(", ")})`);
  }
  return { ...s, baseUrl: s.baseUrl.replace(/\/+$/, "") };
}

/** "owner/name", or undefined when it is not one (a name of only dots would walk up the URL). */
export function parseRepo(full: string): RepoRef | undefined {
  if (!new RegExp(REPO_PATTERN).test(full)) return undefined;
  const [owner, name] = full.split("/") as [string, string];
  if (/^\.+$/.test(owner) || /^\.+$/.test(name)) return undefined;
  return { owner, name, full: `${owner}/${name}` };
}

/** GitHub's names are case-insensitive, so the allow-list is too. */
export function isAllowed(s: Pick<GithubSettings, "repos">, full: string): boolean {
  return !s.repos || s.repos.some((r) => r.toLowerCase() === full.toLowerCase());
}

/**
 * The repo a call works on: its `repo` argument, else the configured default. Refuses a repo
 * outside `tools.settings.github.repos` before anything is sent, and says which ones are allowed.
 */
export function targetRepo(s: GithubSettings, arg: string | undefined): RepoRef {
  const full = arg ?? s.repo;
  if (!full) throw new Error('no repo: pass repo ("owner/name"), or the operator sets a default in tools.settings.github.repo');
  const repo = parseRepo(full);
  if (!repo) throw new Error(`${JSON.stringify(full)} is not a repo: pass "owner/name"`);
  if (!isAllowed(s, repo.full)) throw new Error(`${repo.full} is not a repo this integration may use (tools.settings.github.repos: ${s.repos!.join(", ")}); nothing was done`);
  return repo;
}
