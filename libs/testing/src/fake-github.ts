// A fake GitHub REST API on loopback, for Octokit (`new Octokit({ baseUrl: fake.url })`) or any
// other client of the real protocol:
//
// - Routes: GET /search/issues, GET /repos/:o/:r/issues/:n, GET and POST
//   /repos/:o/:r/issues/:n/comments, POST /repos/:o/:r/issues/:n/labels, DELETE
//   /repos/:o/:r/issues/:n/labels/:name, PATCH /repos/:o/:r/issues/:n (state, state_reason, title,
//   body), POST /repos/:o/:r/issues, GET /rate_limit. Pull requests are issues with a
//   `pull_request` member and share the repo's numbering, as on GitHub.
// - Every request must carry `Authorization: token <t>` or `Bearer <t>` with a known token (401 "Bad
//   credentials" otherwise). A token sees every public repo and the private repos it is given; it
//   writes only where it may (403 "Resource not accessible by personal access token"); a private
//   repo it cannot see is 404, as GitHub hides them.
// - Errors have GitHub's bodies: `{ message, documentation_url }`, and for 422 `Validation Failed`
//   with `errors: [{ resource, code, field, message? }]`. A search without `is:issue` or
//   `is:pull-request` is 422 as on GitHub since 2025. Bodies over 65,536 characters, titles over 256,
//   label names over 50 are 422.
// - Every answer carries x-ratelimit-* headers; `rateLimit()` answers the next calls 403 with
//   `x-ratelimit-remaining: 0` and the reset time (or, `secondary`, 403 with `retry-after`).
// - `transfer()` moves an issue to another repo: its old address answers 301 with a Location, as
//   GitHub does for transferred issues and renamed repos.
//
// State lives in memory; every request is recorded (`calls`, `recorder.waitFor`) so tests assert on
// what GitHub would have seen.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { CallRecorder } from "./call-recorder.js";

export interface GithubUser {
  login: string;
  id: number;
  type: "User" | "Bot";
}

export interface GithubLabel {
  id: number;
  name: string;
  color: string;
  description: string | null;
}

export interface GithubComment {
  id: number;
  body: string;
  user: GithubUser;
  created_at: string;
  updated_at: string;
}

/** An issue (or pull request) as the fake keeps it; `get`s answer it with GitHub's URLs around it. */
export interface GithubIssue {
  owner: string;
  repo: string;
  number: number;
  title: string;
  body: string | null;
  state: "open" | "closed";
  state_reason: "completed" | "not_planned" | "reopened" | null;
  user: GithubUser;
  labels: GithubLabel[];
  comments: GithubComment[];
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  locked: boolean;
  /** Present on pull requests. */
  pull?: { merged: boolean; draft: boolean };
  /** Where it went, when transferred: its old address answers 301 to there. */
  movedTo?: { owner: string; repo: string; number: number };
}

export interface GithubCall {
  method: string;
  /** The path without the query string, decoded (`/repos/acme/app/issues/3/labels/needs triage`). */
  path: string;
  query: Record<string, string>;
  body: unknown;
  /** The token the request carried (undefined when none), and whether the fake knows it. */
  token?: string;
  /** How it was sent: `token` or `bearer` (Octokit picks by the token's shape). */
  scheme?: string;
  status: number;
  at: number;
}

export interface GithubTokenGrant {
  /** The account the token acts as (comment and issue authors). Default "mom-bot". */
  login?: string;
  /** May it write (comment, label, open, close)? Default true. */
  write?: boolean;
  /** Only these repos ("owner/name"); default every repo. Private repos outside it are 404. */
  repos?: string[];
}

export interface FakeGithubOptions {
  /** The token that is accepted (with every right). Default "ghp_fakeTestToken000000000000000000000". */
  token?: string;
}

interface Repo {
  owner: string;
  name: string;
  private: boolean;
  issues: Map<number, GithubIssue>;
  labels: Map<string, GithubLabel>;
  next: number;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const DOCS = "https://docs.github.com/rest";
const MAX_BODY = 65_536;
const key = (owner: string, name: string) => `${owner}/${name}`.toLowerCase();

export class FakeGithub {
  readonly recorder = new CallRecorder<GithubCall>();
  readonly token: string;
  private readonly tokens = new Map<string, Required<Omit<GithubTokenGrant, "repos">> & { repos?: Set<string>; id: number }>();
  private readonly repos = new Map<string, Repo>();
  private limited?: { times: number; resetAt: number; secondary?: number; resource: string };
  private remaining = 5000;
  private nextId = 1000;
  private server?: ReturnType<typeof createServer>;
  url = "";

  constructor(opts: FakeGithubOptions = {}) {
    this.token = opts.token ?? "ghp_fakeTestToken000000000000000000000";
    this.addToken(this.token);
  }

  get calls(): GithubCall[] {
    return this.recorder.calls;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.serve(req, res).catch((err: unknown) => send(res, 500, { message: String(err) })));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** Another accepted token, e.g. a read-only one or one limited to some repos. */
  addToken(token: string, grant: GithubTokenGrant = {}): void {
    this.tokens.set(token, { login: grant.login ?? "mom-bot", write: grant.write ?? true, repos: grant.repos && new Set(grant.repos.map((r) => r.toLowerCase())), id: this.nextId++ });
  }

  /** Creates a repo (issues and labels create theirs on the fly; this is for a private one). */
  addRepo(fullName: string, opts: { private?: boolean } = {}): void {
    this.repo(fullName, true)!.private = opts.private ?? false;
  }

  /** Files an issue (or, with `pull`, a pull request) as someone did on GitHub; returns it. */
  addIssue(fullName: string, i: { title: string; body?: string; labels?: string[]; state?: "open" | "closed"; user?: string; pull?: { merged?: boolean; draft?: boolean }; comments?: Array<{ body: string; user?: string }>; locked?: boolean }): GithubIssue {
    const repo = this.repo(fullName, true)!;
    const at = this.now();
    const issue: GithubIssue = {
      owner: repo.owner,
      repo: repo.name,
      number: repo.next++,
      title: i.title,
      body: i.body ?? null,
      state: i.state ?? "open",
      state_reason: i.state === "closed" ? "completed" : null,
      user: this.user(i.user ?? "octocat"),
      labels: (i.labels ?? []).map((l) => this.label(repo, l)),
      comments: [],
      created_at: at,
      updated_at: at,
      closed_at: i.state === "closed" ? at : null,
      locked: i.locked ?? false,
      ...(i.pull && { pull: { merged: i.pull.merged ?? false, draft: i.pull.draft ?? false } }),
    };
    repo.issues.set(issue.number, issue);
    for (const c of i.comments ?? []) this.comment(issue, c.body, this.user(c.user ?? "octocat"));
    return issue;
  }

  /** The issue as it is now (undefined when there is none). */
  issue(fullName: string, number: number): GithubIssue | undefined {
    return this.repo(fullName)?.issues.get(number);
  }

  /** Every issue and pull request of a repo, by number. */
  issues(fullName: string): GithubIssue[] {
    return [...(this.repo(fullName)?.issues.values() ?? [])].sort((a, b) => a.number - b.number);
  }

  /** The repo's labels (created when first added to an issue, as GitHub does). */
  labels(fullName: string): GithubLabel[] {
    return [...(this.repo(fullName)?.labels.values() ?? [])];
  }

  /** Moves an issue to another repo; its old address answers 301 from then on. Returns the moved issue. */
  transfer(fullName: string, number: number, toFullName: string): GithubIssue {
    const from = this.repo(fullName)!;
    const old = from.issues.get(number);
    if (!old) throw new Error(`no issue ${fullName}#${number}`);
    const to = this.repo(toFullName, true)!;
    const moved: GithubIssue = { ...old, owner: to.owner, repo: to.name, number: to.next++, labels: [] };
    to.issues.set(moved.number, moved);
    old.movedTo = { owner: to.owner, repo: to.name, number: moved.number };
    return moved;
  }

  /**
   * The next `times` requests (default 1) are refused for the rate limit: 403 with
   * `x-ratelimit-remaining: 0` and `x-ratelimit-reset` `resetInSeconds` from now (default 60), or
   * with `secondary` a 403 with `retry-after` (GitHub's secondary limit on bursts).
   */
  rateLimit(opts: { times?: number; resetInSeconds?: number; secondary?: boolean; resource?: "core" | "search" } = {}): void {
    const resetIn = opts.resetInSeconds ?? 60;
    this.limited = { times: opts.times ?? 1, resetAt: Math.floor(Date.now() / 1000) + resetIn, ...(opts.secondary && { secondary: resetIn }), resource: opts.resource ?? "core" };
  }

  private now(): string {
    return new Date().toISOString().replace(/\.\d+Z$/, "Z");
  }

  private user(login: string): GithubUser {
    return { login, id: [...login].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 1_000_000, 7), type: login.endsWith("[bot]") ? "Bot" : "User" };
  }

  private repo(fullName: string, create = false): Repo | undefined {
    const [owner, name] = fullName.split("/");
    if (!owner || !name) throw new Error(`a repo is "owner/name", not ${JSON.stringify(fullName)}`);
    const k = key(owner, name);
    let repo = this.repos.get(k);
    if (!repo && create) {
      repo = { owner, name, private: false, issues: new Map(), labels: new Map(), next: 1 };
      this.repos.set(k, repo);
    }
    return repo;
  }

  private label(repo: Repo, name: string): GithubLabel {
    let label = repo.labels.get(name.toLowerCase());
    if (!label) {
      label = { id: this.nextId++, name, color: "ededed", description: null };
      repo.labels.set(name.toLowerCase(), label);
    }
    return label;
  }

  private comment(issue: GithubIssue, body: string, user: GithubUser): GithubComment {
    const at = this.now();
    const c: GithubComment = { id: this.nextId++, body, user, created_at: at, updated_at: at };
    issue.comments.push(c);
    issue.updated_at = at;
    return c;
  }

  /** A comment as GitHub's API shows it. */
  private commentView(issue: GithubIssue, c: GithubComment) {
    return {
      ...c,
      html_url: `${this.url}/${issue.owner}/${issue.repo}/issues/${issue.number}#issuecomment-${c.id}`,
      url: `${this.url}/repos/${issue.owner}/${issue.repo}/issues/comments/${c.id}`,
      issue_url: `${this.url}/repos/${issue.owner}/${issue.repo}/issues/${issue.number}`,
      author_association: "NONE",
    };
  }

  /** An issue as GitHub's API shows it. */
  private view(i: GithubIssue) {
    const api = `${this.url}/repos/${i.owner}/${i.repo}`;
    const html = `${this.url}/${i.owner}/${i.repo}`;
    return {
      id: i.number + 500_000,
      node_id: `I_fake${i.owner}${i.number}`,
      url: `${api}/issues/${i.number}`,
      repository_url: api,
      labels_url: `${api}/issues/${i.number}/labels{/name}`,
      comments_url: `${api}/issues/${i.number}/comments`,
      html_url: `${html}/${i.pull ? "pull" : "issues"}/${i.number}`,
      number: i.number,
      title: i.title,
      body: i.body,
      state: i.state,
      state_reason: i.state_reason,
      user: i.user,
      labels: i.labels,
      assignees: [],
      comments: i.comments.length,
      created_at: i.created_at,
      updated_at: i.updated_at,
      closed_at: i.closed_at,
      locked: i.locked,
      author_association: "NONE",
      ...(i.pull && {
        draft: i.pull.draft,
        pull_request: { url: `${api}/pulls/${i.number}`, html_url: `${html}/pull/${i.number}`, diff_url: `${html}/pull/${i.number}.diff`, patch_url: `${html}/pull/${i.number}.patch`, merged_at: i.pull.merged ? i.updated_at : null },
      }),
    };
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const parts = url.pathname.split("/").filter(Boolean).map((s) => decodeURIComponent(s));
    const path = `/${parts.join("/")}`;
    const query = Object.fromEntries(url.searchParams);
    const raw = await readBody(req);
    let body: unknown;
    try {
      body = raw.length ? JSON.parse(raw.toString("utf8")) : undefined;
    } catch {
      body = raw.toString("utf8");
    }
    const auth = /^(token|bearer)\s+(\S+)$/i.exec(String(req.headers.authorization ?? ""));
    const call: GithubCall = { method: req.method ?? "GET", path, query, body, ...(auth && { token: auth[2], scheme: auth[1]!.toLowerCase() }), status: 0, at: Date.now() };
    let status = 200;
    let payload: unknown;
    let headers: Record<string, string> = {};
    try {
      const grant = auth ? this.tokens.get(auth[2]!) : undefined;
      if (!grant) throw new HttpError(401, "Bad credentials");
      this.checkRateLimit();
      const r = this.route(call.method, parts, query, body, grant);
      status = r.status ?? 200;
      payload = r.data;
      headers = r.headers ?? {};
    } catch (e) {
      if (!(e instanceof HttpError)) throw e;
      status = e.status;
      payload = { message: e.message, ...e.extra, documentation_url: DOCS, status: String(e.status) };
      headers = e.headers;
    }
    call.status = status;
    this.recorder.record(call);
    send(res, status, payload, { ...this.limitHeaders(), ...headers });
  }

  private limitHeaders(): Record<string, string> {
    if (this.remaining > 1) this.remaining--;
    return { "x-ratelimit-limit": "5000", "x-ratelimit-remaining": String(this.remaining), "x-ratelimit-used": String(5000 - this.remaining), "x-ratelimit-reset": String(Math.floor(Date.now() / 1000) + 3600), "x-ratelimit-resource": "core" };
  }

  private checkRateLimit(): void {
    const l = this.limited;
    if (!l || l.times <= 0) return;
    l.times--;
    if (l.secondary !== undefined) {
      throw new HttpError(403, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", {}, { "retry-after": String(l.secondary) });
    }
    throw new HttpError(403, "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID 0000:FAKE.", {}, {
      "x-ratelimit-limit": "5000",
      "x-ratelimit-remaining": "0",
      "x-ratelimit-used": "5000",
      "x-ratelimit-reset": String(l.resetAt),
      "x-ratelimit-resource": l.resource,
    });
  }

  private route(method: string, parts: string[], query: Record<string, string>, body: unknown, grant: { login: string; write: boolean; repos?: Set<string> }): { status?: number; data: unknown; headers?: Record<string, string> } {
    const b = (body ?? {}) as Record<string, unknown>;
    if (method === "GET" && parts.join("/") === "rate_limit") {
      return { data: { resources: { core: { limit: 5000, remaining: this.remaining, reset: Math.floor(Date.now() / 1000) + 3600 } } } };
    }
    if (method === "GET" && parts.join("/") === "search/issues") return this.search(query, grant);
    if (parts[0] !== "repos" || parts.length < 4 || parts[3] !== "issues") throw new HttpError(404, "Not Found");
    const repo = this.repo(`${parts[1]}/${parts[2]}`);
    const canRead = repo && (!repo.private || !grant.repos || grant.repos.has(key(repo.owner, repo.name)));
    if (!repo || !canRead) throw new HttpError(404, "Not Found");
    const write = method !== "GET";
    if (write && (!grant.write || (grant.repos && !grant.repos.has(key(repo.owner, repo.name))))) throw new HttpError(403, "Resource not accessible by personal access token");

    if (parts.length === 4) {
      if (method !== "POST") throw new HttpError(404, "Not Found");
      return { status: 201, data: this.view(this.create(repo, b, grant.login)) };
    }
    const n = /^[1-9]\d{0,9}$/.test(parts[4]!) ? Number(parts[4]) : NaN;
    const issue = repo.issues.get(n);
    if (!issue) throw new HttpError(404, "Not Found");
    if (issue.movedTo) {
      const to = `${this.url}/repos/${issue.movedTo.owner}/${issue.movedTo.repo}/issues/${issue.movedTo.number}`;
      return { status: 301, data: { message: "Moved Permanently", url: to, documentation_url: DOCS }, headers: { location: to } };
    }
    const rest = parts.slice(5);
    if (rest.length === 0) {
      if (method === "GET") return { data: this.view(issue) };
      if (method === "PATCH") return { data: this.view(this.update(issue, b)) };
    }
    if (rest[0] === "comments" && rest.length === 1) {
      if (method === "GET") return this.page(issue.comments.map((c) => this.commentView(issue, c)), query, `/repos/${repo.owner}/${repo.name}/issues/${n}/comments`, 30);
      if (method === "POST") {
        const text = this.checkBody(b.body, "IssueComment", true);
        if (issue.locked) throw new HttpError(403, "Unable to create comment because issue is locked.");
        return { status: 201, data: this.commentView(issue, this.comment(issue, text!, this.user(grant.login))) };
      }
    }
    if (rest[0] === "labels") {
      if (method === "POST" && rest.length === 1) {
        const names = Array.isArray(b) ? b : b.labels;
        if (!Array.isArray(names) || names.some((x) => typeof x !== "string" && typeof (x as { name?: unknown })?.name !== "string")) {
          throw new HttpError(422, "Invalid request.\n\nFor 'links/0/schema', nil is not an array.");
        }
        for (const x of names as Array<string | { name: string }>) {
          const name = typeof x === "string" ? x : x.name;
          if (!name.trim() || name.length > 50) throw new HttpError(422, "Validation Failed", { errors: [{ resource: "Label", code: "invalid", field: "name", value: name }] });
          if (!issue.labels.some((l) => l.name.toLowerCase() === name.toLowerCase())) issue.labels.push(this.label(repo, name));
        }
        issue.updated_at = this.now();
        return { data: issue.labels };
      }
      if (method === "DELETE" && rest.length === 2) {
        const at = issue.labels.findIndex((l) => l.name.toLowerCase() === rest[1]!.toLowerCase());
        if (at < 0) throw new HttpError(404, "Label does not exist");
        issue.labels.splice(at, 1);
        issue.updated_at = this.now();
        return { data: issue.labels };
      }
    }
    throw new HttpError(404, "Not Found");
  }

  private checkBody(v: unknown, resource: string, required: boolean): string | undefined {
    if (v === undefined || v === null) {
      if (required) throw new HttpError(422, "Validation Failed", { errors: [{ resource, code: "missing_field", field: "body" }] });
      return undefined;
    }
    if (typeof v !== "string") throw new HttpError(422, `Invalid request.\n\nFor 'properties/body', ${JSON.stringify(v)} is not a string.`);
    if (required && !v.trim()) throw new HttpError(422, "Validation Failed", { errors: [{ resource, code: "missing_field", field: "body" }] });
    if (v.length > MAX_BODY) throw new HttpError(422, "Validation Failed", { errors: [{ resource, code: "custom", field: "body", message: `body is too long (maximum is ${MAX_BODY} characters)` }] });
    return v;
  }

  private checkTitle(v: unknown): string {
    if (typeof v !== "string" || !v.trim()) throw new HttpError(422, "Validation Failed", { errors: [{ resource: "Issue", code: "missing_field", field: "title" }] });
    if (v.length > 256) throw new HttpError(422, "Validation Failed", { errors: [{ resource: "Issue", code: "custom", field: "title", message: "title is too long (maximum is 256 characters)" }] });
    return v;
  }

  private create(repo: Repo, b: Record<string, unknown>, login: string): GithubIssue {
    const title = this.checkTitle(b.title);
    const text = this.checkBody(b.body, "Issue", false);
    const labels = b.labels === undefined ? [] : b.labels;
    if (!Array.isArray(labels) || labels.some((l) => typeof l !== "string")) throw new HttpError(422, "Invalid request.\n\nFor 'properties/labels', is not an array of strings.");
    return this.addIssue(`${repo.owner}/${repo.name}`, { title, ...(text !== undefined && { body: text }), labels: labels as string[], user: login });
  }

  private update(issue: GithubIssue, b: Record<string, unknown>): GithubIssue {
    if (b.title !== undefined) issue.title = this.checkTitle(b.title);
    if (b.body !== undefined) issue.body = this.checkBody(b.body, "Issue", false) ?? null;
    if (b.state !== undefined) {
      if (b.state !== "open" && b.state !== "closed") throw new HttpError(422, "Validation Failed", { errors: [{ resource: "Issue", code: "invalid", field: "state" }] });
      const reason = b.state_reason ?? (b.state === "closed" ? "completed" : "reopened");
      if (!["completed", "not_planned", "reopened", "duplicate"].includes(String(reason))) throw new HttpError(422, "Validation Failed", { errors: [{ resource: "Issue", code: "invalid", field: "state_reason" }] });
      if (b.state !== issue.state) issue.closed_at = b.state === "closed" ? this.now() : null;
      issue.state = b.state;
      issue.state_reason = reason as GithubIssue["state_reason"];
    }
    issue.updated_at = this.now();
    return issue;
  }

  /** GitHub's issue search over what the token may read: the qualifiers repo/is/type/state/label/author, the rest are words every match contains. */
  private search(query: Record<string, string>, grant: { repos?: Set<string> }): { data: unknown; headers?: Record<string, string> } {
    const q = query.q ?? "";
    if (!q.trim()) throw new HttpError(422, "Validation Failed", { errors: [{ resource: "Search", code: "missing", field: "q", message: "query is missing" }] });
    const tokens = q.match(/-?[a-z_]+:"[^"]*"|"[^"]*"|\S+/gi) ?? [];
    const repos: string[] = [];
    const tests: Array<(i: GithubIssue) => boolean> = [];
    let kind: "issue" | "pr" | undefined;
    for (const t of tokens) {
      const m = /^(-?)([a-z_]+):"?([^"]*)"?$/i.exec(t);
      const neg = m?.[1] === "-";
      const [qual, value] = [m?.[2]?.toLowerCase(), m?.[3] ?? ""];
      const add = (f: (i: GithubIssue) => boolean) => tests.push(neg ? (i) => !f(i) : f);
      if (qual === "repo") repos.push(value.toLowerCase());
      else if ((qual === "is" || qual === "type") && ["issue", "pr", "pull-request"].includes(value)) kind = value === "issue" ? "issue" : "pr";
      else if ((qual === "is" || qual === "state") && ["open", "closed"].includes(value)) add((i) => i.state === value);
      else if (qual === "label") add((i) => i.labels.some((l) => l.name.toLowerCase() === value.toLowerCase()));
      else if (qual === "no" && value === "label") add((i) => i.labels.length === 0);
      else if (qual === "author") add((i) => i.user.login.toLowerCase() === value.toLowerCase());
      else if (qual === "in") continue;
      else {
        const word = t.replace(/^"|"$/g, "").toLowerCase();
        tests.push((i) => [i.title, i.body ?? "", ...i.comments.map((c) => c.body)].some((s) => s.toLowerCase().includes(word)));
      }
    }
    if (!kind) throw new HttpError(422, "Query must include 'is:issue' or 'is:pull-request'");
    const visible = [...this.repos.values()].filter((r) => !r.private || !grant.repos || grant.repos.has(key(r.owner, r.name)));
    const items = visible
      .filter((r) => !repos.length || repos.includes(key(r.owner, r.name)))
      .flatMap((r) => [...r.issues.values()])
      .filter((i) => !i.movedTo && (kind === "pr") === Boolean(i.pull) && tests.every((t) => t(i)));
    const sort = query.sort;
    const dir = query.order === "asc" ? 1 : -1;
    const by = (i: GithubIssue): string | number => (sort === "comments" ? i.comments.length : sort === "updated" ? i.updated_at + String(i.number).padStart(9, "0") : i.created_at + String(i.number).padStart(9, "0"));
    items.sort((a, b) => (by(a) < by(b) ? -dir : by(a) > by(b) ? dir : 0));
    const { data, headers } = this.page(items.map((i) => ({ ...this.view(i), score: 1 })), query, "/search/issues", 30);
    return { data: { total_count: items.length, incomplete_results: false, items: data }, headers };
  }

  /** GitHub's pagination: `per_page` (at most 100), `page`, and a Link header. */
  private page<T>(all: T[], query: Record<string, string>, path: string, defaultPer: number): { data: T[]; headers: Record<string, string> } {
    const per = Math.min(100, Math.max(1, Number(query.per_page) || defaultPer));
    const page = Math.max(1, Number(query.page) || 1);
    const last = Math.max(1, Math.ceil(all.length / per));
    const link = (p: number, rel: string) => {
      const u = new URL(`${this.url}${path}`);
      for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
      u.searchParams.set("per_page", String(per));
      u.searchParams.set("page", String(p));
      return `<${u.href}>; rel="${rel}"`;
    };
    const links = [...(page < last ? [link(page + 1, "next"), link(last, "last")] : []), ...(page > 1 ? [link(1, "first"), link(page - 1, "prev")] : [])];
    return { data: all.slice((page - 1) * per, page * per), headers: links.length ? { link: links.join(", ") } : {} };
  }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
  res.end(body === undefined ? "" : JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export async function startFakeGithub(opts: FakeGithubOptions = {}): Promise<FakeGithub> {
  return new FakeGithub(opts).start();
}
