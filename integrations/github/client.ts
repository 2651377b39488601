// One Octokit per call, with the token read at that moment (a rotated token is used at once), and
// GitHub's errors turned into sentences the model can act on — none of which ever holds the token.
import { Octokit } from "@octokit/rest";
import type { CustomToolApi } from "@mom/tools";
import type { GithubSettings, RepoRef } from "./settings.js";

/** A call GitHub refused or could not be reached for; `message` is meant for the model. */
export class GithubCallError extends Error {
  override name = "GithubCallError";
}

export interface GithubClient {
  octokit: Octokit;
  /** Replaces the token wherever it might appear in a text (never expected; a last guard). */
  scrub(text: string): string;
}

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

export function githubClient(api: Pick<CustomToolApi, "secret">, s: GithubSettings, signal: AbortSignal): GithubClient {
  let token: string;
  try {
    token = api.secret(s.token);
  } catch (e) {
    // The host's message names the reference, never a value.
    throw new GithubCallError(`cannot read the GitHub token (tools.settings.github.token = ${s.token}): ${(e as Error).message}`);
  }
  const octokit = new Octokit({
    auth: token,
    baseUrl: s.baseUrl,
    userAgent: "mom-github-integration",
    log: quiet,
    // Manual: a transferred issue or renamed repo answers 301, and following it blindly could
    // land in a repo outside the allow-list; movedError says where it went instead.
    request: { signal, redirect: "manual" },
  });
  octokit.hook.wrap("request", async (request, options) => {
    const response = await request(options);
    if (response.status >= 300 && response.status < 400) throw new Moved(String(response.headers.location ?? (response.data as { url?: string })?.url ?? ""));
    return response;
  });
  return { octokit, scrub: (text) => (token.length >= 4 ? text.split(token).join("[token]") : text) };
}

/** A 3xx GitHub answered; `location` is the API address it points to. */
export class Moved extends Error {
  constructor(readonly location: string) {
    super(`moved to ${location}`);
  }
}

interface RequestErrorLike {
  status: number;
  message: string;
  response?: { headers: Record<string, string | number | undefined>; data?: unknown };
}

const isRequestError = (e: unknown): e is RequestErrorLike => e instanceof Error && e.name === "HttpError" && typeof (e as { status?: unknown }).status === "number";

/**
 * What went wrong, for the model: `what` names the thing asked for ("acme/app#12"). Aborts pass
 * through untouched so the gate sees them as aborts.
 */
export function explainGithubError(e: unknown, ctx: { what: string; repo?: RepoRef; settings: GithubSettings; client?: GithubClient }): Error {
  const scrub = ctx.client?.scrub ?? ((t: string) => t);
  if (e instanceof GithubCallError) return new GithubCallError(scrub(e.message));
  if (e instanceof Moved) return new GithubCallError(scrub(movedMessage(e.location, ctx)));
  if (!isRequestError(e)) {
    if ((e as Error)?.name === "AbortError") return e as Error;
    return new GithubCallError(scrub(`${ctx.what}: ${(e as Error)?.message ?? String(e)}`));
  }
  const data = (e.response?.data ?? {}) as { message?: string; errors?: Array<{ resource?: string; field?: string; code?: string; message?: string } | string> };
  const said = typeof data.message === "string" ? data.message : "";
  const headers = e.response?.headers ?? {};
  const header = (name: string) => (headers[name] === undefined ? undefined : String(headers[name]));
  let text: string;
  if (!e.response) {
    text = `cannot reach GitHub at ${ctx.settings.baseUrl} (tools.settings.github.baseUrl): ${e.message}`;
  } else if (e.status === 401) {
    text = `GitHub refused the token (401 ${said || "Unauthorized"}): the token that tools.settings.github.token (${ctx.settings.token}) points to is wrong, expired or revoked; the operator must replace it. Nothing was done.`;
  } else if ((e.status === 403 || e.status === 429) && header("x-ratelimit-remaining") === "0") {
    const reset = Number(header("x-ratelimit-reset"));
    const when = Number.isFinite(reset) && reset > 0 ? `; it resets at ${new Date(reset * 1000).toISOString()} (in ${Math.max(0, Math.ceil(reset - Date.now() / 1000))} s)` : "";
    const resource = header("x-ratelimit-resource");
    text = `GitHub's rate limit for this token is used up (${header("x-ratelimit-limit") ?? "?"} requests${resource && resource !== "core" ? ` of the ${resource} API` : ""} per period)${when}. Nothing was done; try again after the reset, with fewer calls.`;
  } else if ((e.status === 403 || e.status === 429) && header("retry-after") !== undefined) {
    text = `GitHub's secondary rate limit (too many requests in a short time): wait ${header("retry-after")} s before calling again. Nothing was done.`;
  } else if (e.status === 403) {
    text = `GitHub refused ${ctx.what} (403 ${said || "Forbidden"}): the token may not do this${ctx.repo ? ` in ${ctx.repo.full}` : ""} — a fine-grained token needs "Issues: read and write" (and "Pull requests" for pull requests) on the repo, a classic one the "repo" (or "public_repo") scope. Nothing was done.`;
  } else if (e.status === 404) {
    text = said && said !== "Not Found" ? `${ctx.what}: GitHub says "${said}" (404). Nothing was done.` : `${ctx.what} was not found (404): it does not exist, or the token cannot see it (GitHub answers 404 for private repos a token may not read). Nothing was done.`;
  } else if (e.status === 410) {
    text = `${ctx.what}: GitHub says "${said || "Gone"}" (410) — issues may be disabled in this repo, or the issue was deleted. Nothing was done.`;
  } else if (e.status === 422) {
    const details = (data.errors ?? []).map((x) => (typeof x === "string" ? x : x.message ?? [x.resource, x.field, x.code].filter(Boolean).join(" "))).filter(Boolean);
    text = `GitHub rejected ${ctx.what} (422 ${said || "Unprocessable Entity"}${details.length ? `: ${details.join("; ")}` : ""}). Nothing was done; fix the input and try again.`;
  } else if (e.status >= 500) {
    text = `GitHub had an error with ${ctx.what} (${e.status} ${said}); it may have done it or not — check before retrying.`;
  } else {
    text = `GitHub answered ${e.status} to ${ctx.what}${said ? `: ${said}` : ""}.`;
  }
  return new GithubCallError(scrub(text));
}

/** "acme/app#3 moved to other/place#7" from an API address, and whether the model may follow it. */
function movedMessage(location: string, ctx: { what: string; settings: GithubSettings }): string {
  const m = /\/repos\/([^/]+)\/([^/]+)(?:\/issues\/(\d+))?/.exec(location);
  if (!m) return `${ctx.what} moved (GitHub answered a redirect${location ? ` to ${location}` : ""}). Nothing was done.`;
  const target = `${decodeURIComponent(m[1]!)}/${decodeURIComponent(m[2]!)}`;
  const allowed = !ctx.settings.repos || ctx.settings.repos.some((r) => r.toLowerCase() === target.toLowerCase());
  const where = m[3] ? `${target}#${m[3]}` : target;
  return allowed
    ? `${ctx.what} moved to ${where} (transferred, or the repo was renamed). Nothing was done; call again with repo ${target}${m[3] ? ` and number ${m[3]}` : ""}.`
    : `${ctx.what} moved to ${where}, which is not a repo this integration may use (tools.settings.github.repos). Nothing was done.`;
}
