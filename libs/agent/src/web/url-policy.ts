import ipaddr from "ipaddr.js";
import { minimatch } from "minimatch";

export interface WebPolicy {
  /** Host globs that may be fetched (`*` = any public host). */
  allow: string[];
  /** Host globs never fetched; deny wins. */
  deny: string[];
  /** CIDRs of otherwise refused (private, loopback…) addresses that may be reached. */
  privateRanges: string[];
}

/** Why a URL or an address is refused; the message is for the model and names the rule. */
export class WebRefusal extends Error {
  override name = "WebRefusal";
}

const hostMatches = (host: string, globs: string[]) => globs.some((g) => minimatch(host, g.toLowerCase(), { nocase: true, dot: true }));

/** The URL itself: http(s) only, no credentials in it, a host the allow/deny globs let through. */
export function checkUrl(raw: string, policy: WebPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebRefusal(`not a URL: ${JSON.stringify(raw.slice(0, 200))}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new WebRefusal(`only http and https URLs are fetched, not ${url.protocol}`);
  if (url.username || url.password) throw new WebRefusal("a URL with a user name or password in it is not fetched");
  const host = url.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase();
  if (hostMatches(host, policy.deny)) throw new WebRefusal(`${host} is denied by web.deny`);
  if (!hostMatches(host, policy.allow)) throw new WebRefusal(`${host} is not in web.allow`);
  if (ipaddr.isValid(host)) checkAddress(host, policy);
  return url;
}

/**
 * An address the runner is about to connect to: only public unicast ("unicast" in ipaddr.js's
 * ranges), unless `privateRanges` names it. Checked on the address really connected to (in the
 * connection's DNS lookup), so a name that resolves to 127.0.0.1 — or changes its answer between
 * a check and the connect — is refused just the same.
 */
export function checkAddress(address: string, policy: WebPolicy): void {
  let ip = ipaddr.parse(address);
  if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  const range = ip.range();
  if (range === "unicast") return;
  for (const cidr of policy.privateRanges) {
    const [net, bits] = ipaddr.parseCIDR(cidr);
    if (net.kind() === ip.kind() && ip.match(net, bits)) return;
  }
  throw new WebRefusal(`${address} is a ${range} address; web.privateRanges would have to allow it`);
}
