import { createHash, timingSafeEqual } from "node:crypto";
import ipaddr from "ipaddr.js";
import { ConfigError, type ConsoleConfig, type MomConfig } from "@mom/config";

/** A signed-in console user, as config.json `console.users` declares them. */
export interface ConsoleIdentity {
  name: string;
  role: "viewer" | "approver";
  /** Their user id per adapter: decisions are made as this id. */
  as: Record<string, string>;
}

export const MIN_TOKEN_LENGTH = 16;

/** Config mistakes the console cannot run with, named by field (a short or shared login token, `as` naming no adapter). */
export function consoleConfigIssues(config: MomConfig): Array<{ path: string; message: string }> {
  const issues: Array<{ path: string; message: string }> = [];
  const seen = new Map<string, string>();
  for (const [name, u] of Object.entries(config.console.users)) {
    if (u.token !== undefined) {
      if (u.token.startsWith("env:")) issues.push({ path: `/console/users/${name}/token`, message: `${u.token} was not resolved (is the variable set?)` });
      else if (u.token.length < MIN_TOKEN_LENGTH) issues.push({ path: `/console/users/${name}/token`, message: `a login token must be at least ${MIN_TOKEN_LENGTH} characters (e.g. openssl rand -hex 24)` });
      const other = seen.get(u.token);
      if (other) issues.push({ path: `/console/users/${name}/token`, message: `the same token as console user ${other}: each person needs their own` });
      seen.set(u.token, name);
    }
    for (const adapter of Object.keys(u.as ?? {}))
      if (!config.adapters[adapter]) issues.push({ path: `/console/users/${name}/as/${adapter}`, message: `no adapter ${adapter} (configured: ${Object.keys(config.adapters).join(", ")})` });
  }
  return issues;
}

export function assertConsoleConfig(config: MomConfig, configFile: string): void {
  const issues = consoleConfigIssues(config);
  if (issues.length) throw new ConfigError(configFile, issues);
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/** Where an identity proxy may connect from unless console.trustedProxies says otherwise: this host. */
export const LOOPBACK_PROXIES = ["127.0.0.0/8", "::1/128"];

/** Who a request is: the trusted header (only when configured), else the login token's session. */
export class Identities {
  private readonly tokens: Array<{ hash: Buffer; name: string }>;
  private readonly proxies: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;

  constructor(private readonly cfg: ConsoleConfig) {
    this.tokens = Object.entries(cfg.users)
      .filter(([, u]) => u.token)
      .map(([name, u]) => ({ hash: digest(u.token!), name }));
    this.proxies = (cfg.trustedProxies ?? LOOPBACK_PROXIES).map((cidr) => ipaddr.parseCIDR(cidr));
  }

  /**
   * Whether a connection from `address` may carry the identity header: anyone else who reaches the
   * console could name any user in it. The peer of the TCP connection is asked, never a forwarded-for header.
   */
  trustsProxyAt(address: string | undefined): boolean {
    if (!address || !ipaddr.isValid(address)) return false;
    let ip = ipaddr.parse(address);
    if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
    return this.proxies.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits));
  }

  get headerName(): string | undefined {
    return this.cfg.identityHeader?.toLowerCase();
  }

  get tokenLogin(): boolean {
    return this.tokens.length > 0;
  }

  byName(name: string | undefined): ConsoleIdentity | undefined {
    if (!name || !Object.hasOwn(this.cfg.users, name)) return undefined;
    const u = this.cfg.users[name]!;
    return { name, role: u.role, as: { ...u.as } };
  }

  /** The user a login token belongs to; every token is compared, in constant time. */
  byToken(token: string): ConsoleIdentity | undefined {
    const h = digest(token);
    let found: string | undefined;
    for (const t of this.tokens) if (timingSafeEqual(t.hash, h)) found = t.name;
    return this.byName(found);
  }
}
