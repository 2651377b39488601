import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { Agent, request } from "undici";
import { checkAddress, checkUrl, type WebPolicy, WebRefusal } from "./url-policy.js";

export interface FetchLimits {
  maxBytes: number;
  timeoutMs: number;
  maxRedirects: number;
}

export interface FetchedPage {
  /** Where the body came from, after redirects. */
  url: string;
  status: number;
  contentType: string;
  body: Buffer;
  /** The body was longer than maxBytes and was cut there. */
  truncated: boolean;
  redirects: string[];
}

const REDIRECT = new Set([301, 302, 303, 307, 308]);

/**
 * GETs `raw` on the runner (the sandbox stays offline): every URL of the redirect chain passes
 * `checkUrl`, and every address connected to passes `checkAddress` inside the connection's own DNS
 * lookup, so what is checked is what is connected to. The body is read up to `maxBytes`; the
 * whole fetch, redirects included, is bounded by `timeoutMs` and the caller's signal.
 */
export async function fetchPage(raw: string, policy: WebPolicy, limits: FetchLimits, signal?: AbortSignal): Promise<FetchedPage> {
  const lookup: typeof dnsLookup = ((hostname: string, options: object, callback: (err: Error | null, address?: string | LookupAddress[], family?: number) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err);
      try {
        for (const a of addresses) checkAddress(a.address, policy);
      } catch (refusal) {
        return callback(refusal as Error);
      }
      if ((options as { all?: boolean }).all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  }) as typeof dnsLookup;
  const dispatcher = new Agent({ connect: { lookup }, connections: 1, pipelining: 0 });
  const bound = AbortSignal.timeout(limits.timeoutMs);
  const combined = signal ? AbortSignal.any([signal, bound]) : bound;
  const redirects: string[] = [];
  try {
    let url = checkUrl(raw, policy);
    for (;;) {
      let res;
      try {
        res = await request(url, {
          method: "GET",
          dispatcher,
          signal: combined,
          headers: { "user-agent": "mom-web-fetch/1", accept: "text/html,application/xhtml+xml,text/plain,application/json;q=0.9,*/*;q=0.5" },
        });
      } catch (err) {
        throw describeFailure(err, url, bound, limits);
      }
      if (REDIRECT.has(res.statusCode)) {
        await res.body.dump().catch(() => {});
        const location = res.headers.location;
        if (typeof location !== "string") throw new Error(`${url} answered ${res.statusCode} without a Location`);
        if (redirects.length >= limits.maxRedirects) throw new WebRefusal(`more than ${limits.maxRedirects} redirects (web.maxRedirects)`);
        const next = new URL(location, url).toString();
        redirects.push(next);
        try {
          url = checkUrl(next, policy);
        } catch (refusal) {
          throw new WebRefusal(`redirected to ${next}, which is refused: ${(refusal as Error).message}`);
        }
        continue;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      try {
        for await (const chunk of res.body) {
          const room = limits.maxBytes - size;
          if (chunk.length >= room) {
            chunks.push(chunk.subarray(0, room));
            size += room;
            truncated = chunk.length > room;
            break;
          }
          chunks.push(chunk);
          size += chunk.length;
        }
      } catch (err) {
        throw describeFailure(err, url, bound, limits);
      } finally {
        if (!res.body.destroyed) res.body.destroy();
      }
      const contentType = String(res.headers["content-type"] ?? "");
      return { url: url.toString(), status: res.statusCode, contentType, body: Buffer.concat(chunks), truncated, redirects };
    }
  } finally {
    void dispatcher.close().catch(() => {});
  }
}

function describeFailure(err: unknown, url: URL, bound: AbortSignal, limits: FetchLimits): Error {
  if (err instanceof WebRefusal) return err;
  // undici wraps what the lookup refused; the refusal is the useful part.
  const cause = (err as { cause?: unknown })?.cause;
  if (cause instanceof WebRefusal) return cause;
  if (bound.aborted) return new Error(`${url} did not answer within ${Math.round(limits.timeoutMs / 1000)} s (web.timeoutSeconds)`);
  const code = (err as { code?: string })?.code ?? (cause as { code?: string } | undefined)?.code;
  return new Error(`could not fetch ${url}: ${code ? `${code} ` : ""}${(err as Error)?.message ?? String(err)}`);
}
