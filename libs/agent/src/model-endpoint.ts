import type { Api, Model } from "@mariozechner/pi-ai";
import { existsSync, readFileSync } from "node:fs";
import { connect as netConnect, isIP } from "node:net";
import { connect as tlsConnect } from "node:tls";

/**
 * What went wrong between mom and a model's endpoint, in words an operator can act on: which
 * endpoint (the base URL, without credentials), what failed, and what to do about it. Used by
 * `mom doctor`, the check at `mom up`/`mom runner` start, and the error a failed run shows in chat.
 */
export type EndpointFailureKind = "refused" | "dns" | "tls" | "timeout" | "unreachable" | "auth" | "model-not-found" | "http";

export interface EndpointProblem {
  kind: EndpointFailureKind;
  /** `provider/id` */
  model: string;
  /** The base URL without user, password, query or fragment. */
  endpoint: string;
  status?: number;
  /** What the network or the server said (no secrets: error codes and the server's own message). */
  detail: string;
  /** What to do about it. */
  fix: string;
}

/** Where a model's endpoint is configured, so the fix can name the file and field. */
export interface EndpointOrigin {
  /** data/models.json: a provider defined there is the operator's to fix. */
  modelsFile?: string;
}

const KIND_TEXT: Record<EndpointFailureKind, string> = {
  refused: "connection refused",
  dns: "host name not found (DNS)",
  tls: "TLS handshake failed",
  timeout: "no answer (timeout)",
  unreachable: "network unreachable",
  auth: "credentials refused",
  "model-not-found": "model not found",
  http: "HTTP error",
};

/** The base URL as it may be shown: no `user:password@`, no query string (some put keys there). */
export function shownEndpoint(baseUrl: string | undefined): string {
  if (!baseUrl) return "(no base URL)";
  try {
    const u = new URL(baseUrl);
    u.username = "";
    u.password = "";
    u.search = "";
    u.hash = "";
    return u.toString().replace(/\/$/, "");
  } catch {
    return baseUrl.replace(/\/\/[^/@]*@/, "//").replace(/[?#].*$/, "");
  }
}

/** The HTTP status a provider SDK put at the start of its message ("401 Incorrect API key …"). */
export function statusOfMessage(message: string | undefined): number | undefined {
  const m = /^\s*(\d{3})\b/.exec(message ?? "");
  const n = m ? Number(m[1]) : NaN;
  return n >= 400 && n < 600 ? n : undefined;
}

/** A network-level failure's kind from a fetch error's cause chain (undici's `cause.code`). */
export function networkFailureOf(err: unknown): { kind: EndpointFailureKind; code: string } | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = String((e as { code?: unknown }).code ?? "");
    const name = String((e as { name?: unknown }).name ?? "");
    if (code === "ECONNREFUSED") return { kind: "refused", code };
    if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EAI_NONAME") return { kind: "dns", code };
    if (/^(ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/.test(code) || code === "EPROTO") return { kind: "tls", code };
    if (code === "UND_ERR_CONNECT_TIMEOUT" || code === "ETIMEDOUT" || code === "UND_ERR_HEADERS_TIMEOUT" || name === "TimeoutError") return { kind: "timeout", code: code || name };
    if (code === "ENETUNREACH" || code === "EHOSTUNREACH" || code === "ECONNRESET" || code === "EPIPE") return { kind: "unreachable", code };
  }
  return undefined;
}

/** Whether the model's provider is defined in models.json (then its baseUrl is the operator's). */
function definedIn(modelsFile: string | undefined, provider: string): boolean {
  if (!modelsFile || !existsSync(modelsFile)) return false;
  try {
    const parsed = JSON.parse(readFileSync(modelsFile, "utf8")) as { providers?: Record<string, unknown> };
    return Object.hasOwn(parsed.providers ?? {}, provider);
  } catch {
    return false;
  }
}

function fixFor(kind: EndpointFailureKind, model: Model<Api>, origin: EndpointOrigin, status?: number): string {
  const custom = definedIn(origin.modelsFile, model.provider);
  const url = custom ? `providers.${model.provider}.baseUrl in ${origin.modelsFile}` : `the network's access to ${model.provider}'s API`;
  switch (kind) {
    case "refused":
      return custom ? `nothing listens there: start the server (for Ollama: \`ollama serve\`) or correct ${url}` : `nothing listens there: check ${url} (proxy, firewall)`;
    case "dns":
      return custom ? `check the host name in ${url}` : `check DNS and ${url}`;
    case "tls":
      return custom ? `check http:// against https:// and the server's certificate (${url})` : `check the TLS setup (a proxy that intercepts TLS needs NODE_EXTRA_CA_CERTS)`;
    case "timeout":
    case "unreachable":
      return custom ? `check the host, port and firewall (${url}), and that the server is up` : `check ${url}`;
    case "auth":
      return custom
        ? `check the key: providers.${model.provider}.apiKey in ${origin.modelsFile}, or \`mom auth add ${model.provider} --api-key\``
        : `check the key: \`mom auth list\`, \`mom auth add ${model.provider} --api-key\`${model.provider === "anthropic" ? " (or --setup-token)" : ""}, or the provider's environment variable`;
    case "model-not-found":
      return custom
        ? `the server does not serve "${model.id}": correct "model" in config.json or the id in ${origin.modelsFile} (for Ollama: \`ollama pull ${model.id}\`), or the path in ${url} (OpenAI-compatible servers usually end in /v1)`
        : `the provider does not know "${model.id}": correct "model" in config.json`;
    case "http":
      return status !== undefined && status >= 500 ? "the server failed: see its logs, or try again later" : "see the server's message";
  }
}

export function endpointProblem(model: Model<Api>, kind: EndpointFailureKind, detail: string, origin: EndpointOrigin = {}, status?: number): EndpointProblem {
  return { kind, model: `${model.provider}/${model.id}`, endpoint: shownEndpoint(model.baseUrl), ...(status !== undefined && { status }), detail: scrub(detail), fix: fixFor(kind, model, origin, status) };
}

/** One line: `model fake/m at http://h:1/v1: connection refused (ECONNREFUSED) — nothing listens there: …`. */
export function describeEndpointProblem(p: EndpointProblem, o: { detail?: boolean } = {}): string {
  const what = p.kind === "http" ? `HTTP ${p.status ?? "error"}` : p.status !== undefined ? `${KIND_TEXT[p.kind]} (HTTP ${p.status})` : KIND_TEXT[p.kind];
  const detail = p.detail && o.detail !== false ? ` (${oneLine(p.detail)})` : "";
  return `model ${p.model} at ${p.endpoint}: ${what}${detail} — ${p.fix}`;
}

function oneLine(s: string): string {
  const line = s.trim().split("\n")[0] ?? "";
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

function kindOfStatus(status: number): EndpointFailureKind {
  if (status === 401 || status === 403) return "auth";
  if (status === 404) return "model-not-found";
  return "http";
}

/** How long the reachability check waits for the endpoint. */
export const REACH_TIMEOUT_MS = 5_000;

/**
 * Connects to the endpoint's host and port (TCP, and the TLS handshake for https): undefined when
 * that works, else the network-level failure (refused, DNS, TLS, timeout). A socket, not fetch:
 * fetch hides the cause for some ports and URLs ("fetch failed").
 */
export async function reachEndpoint(baseUrl: string, timeoutMs = REACH_TIMEOUT_MS): Promise<{ kind: EndpointFailureKind; code: string } | undefined> {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return { kind: "dns", code: "invalid URL" };
  }
  const secure = url.protocol === "https:";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port || (secure ? 443 : 80));
  return new Promise((resolve) => {
    const socket = secure ? tlsConnect({ host, port, servername: isIP(host) ? undefined : host }) : netConnect({ host, port });
    const done = (r: { kind: EndpointFailureKind; code: string } | undefined) => {
      clearTimeout(timer);
      socket.removeAllListeners();
      socket.on("error", () => {});
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done({ kind: "timeout", code: `${timeoutMs / 1000} s` }), timeoutMs);
    socket.once(secure ? "secureConnect" : "connect", () => done(undefined));
    socket.once("error", (err) => done(networkFailureOf(err) ?? { kind: "unreachable", code: String((err as { code?: unknown }).code ?? scrub(err.message)) }));
  });
}

/** URLs in a message without their credentials or query. */
function scrub(s: string): string {
  return s.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s]+/gi, (u) => shownEndpoint(u));
}

/**
 * What a failed model call means, from the error message a provider SDK gave (which is often
 * only "Connection error."): an HTTP status at its start is classified; without one the endpoint
 * is connected to, to tell refused from DNS from TLS. Undefined when it is neither (then the
 * message stands alone).
 */
export async function diagnoseModelError(model: Model<Api>, message: string, origin: EndpointOrigin = {}, status?: number): Promise<EndpointProblem | undefined> {
  const code = status ?? statusOfMessage(message);
  if (code !== undefined) return endpointProblem(model, kindOfStatus(code), message.replace(/^\s*\d{3}\s*/, ""), origin, code);
  if (!model.baseUrl || !/connection|fetch failed|network|socket|ECONN|ENOTFOUND|EAI_AGAIN|timed? ?out|certificate|TLS|SSL/i.test(message)) return undefined;
  const net = await reachEndpoint(model.baseUrl);
  return net ? endpointProblem(model, net.kind, net.code, origin) : undefined;
}

/** The paths of model list endpoints, by API: a free call that proves the endpoint, the key and the model. */
function modelsUrl(model: Model<Api>): string | undefined {
  if (!model.baseUrl) return undefined;
  if (model.api === "openai-completions" || model.api === "openai-responses") return `${model.baseUrl.replace(/\/$/, "")}/models`;
  return undefined;
}

/**
 * The check at start: costs nothing (no completion). For OpenAI-compatible endpoints, GET
 * `<baseUrl>/models` with the key: refused/DNS/TLS/timeout, 401/403, and a model the server does
 * not list; for other APIs, whether the endpoint can be reached at all. Undefined when all is well.
 */
export async function checkModelEndpoint(
  model: Model<Api>,
  auth: { apiKey?: string; headers?: Record<string, string> },
  origin: EndpointOrigin = {},
  timeoutMs = REACH_TIMEOUT_MS,
): Promise<EndpointProblem | undefined> {
  if (!model.baseUrl) return undefined;
  const url = modelsUrl(model);
  if (!url) {
    const net = await reachEndpoint(model.baseUrl, timeoutMs);
    return net ? endpointProblem(model, net.kind, net.code, origin) : undefined;
  }
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { ...auth.headers, ...(auth.apiKey && { Authorization: `Bearer ${auth.apiKey}` }) },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const net = networkFailureOf(err) ?? (await reachEndpoint(model.baseUrl, timeoutMs)) ?? { kind: "unreachable" as const, code: scrub(oneLine((err as Error).message)) };
    return endpointProblem(model, net.kind, net.code, origin);
  }
  const text = await res.text().catch(() => "");
  if (res.status === 401 || res.status === 403) return endpointProblem(model, "auth", serverMessage(text), origin, res.status);
  if (!res.ok) return undefined; // no model list here (not every server has one): nothing to conclude
  let ids: string[] | undefined;
  try {
    const data = (JSON.parse(text) as { data?: Array<{ id?: unknown }> }).data;
    if (Array.isArray(data)) ids = data.map((m) => String(m.id));
  } catch {
    // not a model list
  }
  if (ids && ids.length && !ids.includes(model.id)) {
    const shown = ids.slice(0, 8).join(", ") + (ids.length > 8 ? ", …" : "");
    return endpointProblem(model, "model-not-found", `the server lists: ${shown}`, origin);
  }
  return undefined;
}

function serverMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof parsed.error === "string" ? parsed.error : (parsed.error?.message ?? parsed.message);
    if (typeof m === "string") return oneLine(m);
  } catch {
    // not JSON
  }
  return oneLine(body);
}
