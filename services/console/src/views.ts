import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Eta } from "eta";
import { qualifiedChannelId, parseQualifiedChannelId } from "@mom/contracts";
import { formatUsage } from "@mom/format";

/** services/console/views and public/: beside src/ and dist/ alike. */
export const VIEWS_DIR = fileURLToPath(new URL("../views", import.meta.url));
export const PUBLIC_DIR = fileURLToPath(new URL("../public", import.meta.url));

const require = createRequire(import.meta.url);
/** htmx and its SSE extension, served as they ship (no build step, no CDN). */
export const STATIC_FILES: Record<string, string> = {
  "htmx.min.js": require.resolve("htmx.org/dist/htmx.min.js"),
  "sse.js": require.resolve("htmx-ext-sse/dist/sse.js"),
  "console.css": `${PUBLIC_DIR}/console.css`,
};

const enc = encodeURIComponent;
export function channelUrl(qualified: string): string {
  const ref = parseQualifiedChannelId(qualified);
  return `/channels/${enc(ref.adapter)}/${enc(ref.channelId)}`;
}

/** A channel's overview row id: stable, and safe in an id and a CSS selector whatever the channel id holds. */
export const rowId = (qualified: string) => `ch-${Buffer.from(qualified).toString("base64url")}`;

/** What every template may call: links and figures written one way. */
export const helpers = {
  channelUrl,
  runUrl: (qualified: string, runId: string) => `${channelUrl(qualified)}/runs/${enc(runId)}`,
  time: (iso: string | undefined) => (iso ? `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC` : "—"),
  usd: (n: number) => (n === 0 ? "$0" : n < 0.01 ? `$${n.toFixed(4)}` : `$${n.toFixed(2)}`),
  clip: (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s),
  qualified: qualifiedChannelId,
  usage: formatUsage,
  rowId,
};

/** Server-rendered pages (Eta, every value escaped unless a template says otherwise). */
export class Views {
  private readonly eta = new Eta({ views: VIEWS_DIR, autoEscape: true, cache: true });

  render(name: string, data: Record<string, unknown>): string {
    return this.eta.render(`./${name}`, { ...data, h: helpers });
  }

  rowId(qualified: string): string {
    return rowId(qualified);
  }
}
