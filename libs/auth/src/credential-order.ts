import type { AuthProfile, ConfigIssue, MomConfig } from "@mom/config";

/** A credential a model call may use: one profile, or pi's own lookup (environment, auth.json, models.json). */
export type Credential = { id: string; provider: string; profile: AuthProfile } | { id: typeof DEFAULT_CREDENTIAL; provider: string; profile?: undefined };

/** The id of the last resort: whatever pi finds for the provider (ANTHROPIC_OAUTH_TOKEN, ANTHROPIC_API_KEY, …). */
export const DEFAULT_CREDENTIAL = "env";

/**
 * The credentials of `provider` a channel tries, first to last: the channel's pin, then
 * `auth.order[provider]`, then the provider's other profiles in file order, then pi's own lookup
 * when it has something (`hasDefault`). The one place this order is decided.
 */
export function credentialOrder(opts: { provider: string; channel?: string; config: MomConfig; profiles: AuthProfile[]; hasDefault: boolean }): Credential[] {
  const mine = opts.profiles.filter((p) => p.provider === opts.provider);
  const byId = new Map(mine.map((p) => [p.id, p]));
  const ids: string[] = [];
  const pin = opts.channel ? opts.config.channels[opts.channel]?.authProfile : undefined;
  if (pin && byId.has(pin)) ids.push(pin);
  for (const id of opts.config.auth.order[opts.provider] ?? []) if (byId.has(id) && !ids.includes(id)) ids.push(id);
  for (const p of mine) if (!ids.includes(p.id)) ids.push(p.id);
  const out: Credential[] = ids.map((id) => ({ id, provider: opts.provider, profile: byId.get(id)! }));
  if (opts.hasDefault) out.push({ id: DEFAULT_CREDENTIAL, provider: opts.provider });
  return out;
}

/** config.json references to profiles that do not exist or belong to another provider. */
export function authConfigIssues(config: MomConfig, profiles: AuthProfile[]): ConfigIssue[] {
  const byId = new Map(profiles.map((p) => [p.id, p]));
  const issues: ConfigIssue[] = [];
  const known = profiles.map((p) => p.id).join(", ") || "none";
  for (const [provider, ids] of Object.entries(config.auth.order)) {
    ids.forEach((id, i) => {
      const p = byId.get(id);
      if (!p) issues.push({ path: `/auth/order/${provider}/${i}`, message: `no auth profile ${JSON.stringify(id)} (profiles: ${known})` });
      else if (p.provider !== provider) issues.push({ path: `/auth/order/${provider}/${i}`, message: `profile ${JSON.stringify(id)} is for provider ${JSON.stringify(p.provider)}` });
    });
  }
  for (const [channel, settings] of Object.entries(config.channels)) {
    if (settings.authProfile && !byId.has(settings.authProfile)) {
      issues.push({ path: `/channels/${channel}/authProfile`, message: `no auth profile ${JSON.stringify(settings.authProfile)} (profiles: ${known})` });
    }
  }
  return issues;
}
