// The reads: search issues and pull requests, and read one with its comments.
import Type from "typebox";
import type { CustomToolApi, MomTool } from "@mom/tools";
import { explainGithubError, githubClient } from "./client.js";
import { type CommentData, hitLine, type IssueData, issueText, repoOfUrl } from "./format.js";
import { isAllowed, loadSettings, parseRepo, REPO_PATTERN, type RepoRef, targetRepo } from "./settings.js";

export const TIMEOUT_MS = 30_000;

/**
 * What the operator configured, as far as it is known when the tools are made: the default repo
 * goes into the schemas, so the prompt shows it and an approver sees which repo a call touches.
 */
export interface Known {
  repo?: string;
  repos?: string[];
}

export function repoArg(known: Known, what = "The repo") {
  const allowed = known.repos ? `; only ${known.repos.join(", ")}` : "";
  return known.repo
    ? Type.String({ pattern: REPO_PATTERN, default: known.repo, description: `${what}, "owner/name"${allowed}` })
    : Type.Optional(Type.String({ pattern: REPO_PATTERN, description: `${what}, "owner/name"${allowed}` }));
}
export const NumberArg = Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: "The issue or pull request number" });

// Qualifiers that pick repos: in a scoped search they could widen it past the allowed repos.
const REPO_QUALIFIER = /(^|[\s(])-?(repo|org|user|owner)\s*:/i;
const KIND_QUALIFIER = /(^|[\s(])(is|type):(issue|pr|pull-request)\b/i;

const searchParams = (known: Known) => Type.Object({
  query: Type.String({
    minLength: 1,
    maxLength: 256,
    description: "GitHub search words and qualifiers, e.g. `crash is:open label:bug author:ann`. Use the repo argument instead of repo:/org:/user:",
  }),
  repo: known.repo ? repoArg(known, "Search only this repo") : repoArg(known, `Search only this repo${known.repos ? "; default: every allowed repo" : ""}`),
  type: Type.Optional(Type.Union([Type.Literal("issue"), Type.Literal("pr")], { description: "issue (the default) or pr (pull requests)" })),
  state: Type.Optional(Type.Union([Type.Literal("open"), Type.Literal("closed")], { description: "Only open or only closed ones" })),
  sort: Type.Optional(Type.Union([Type.Literal("created"), Type.Literal("updated"), Type.Literal("comments")], { description: "Newest first by this; default best match" })),
  limit: Type.Integer({ minimum: 1, maximum: 50, default: 20, description: "How many to show" }),
});

const getParams = (known: Known) => Type.Object({
  repo: repoArg(known),
  number: NumberArg,
  comments: Type.Integer({ minimum: 0, maximum: 50, default: 10, description: "How many of the latest comments to include" }),
});

export function searchTool(api: CustomToolApi, known: Known): MomTool<ReturnType<typeof searchParams>> {
  return {
    id: "github.issues.search",
    risk: "read",
    description:
      "Search GitHub issues or pull requests (GitHub's search syntax) in the allowed repos; lists number, state, title, labels, author and last update of each hit. Read one with github.issue.get.",
    parameters: searchParams(known),
    timeoutMs: TIMEOUT_MS,
    async execute(args, ctx) {
      const s = loadSettings(api);
      const scope: RepoRef[] = args.repo ? [targetRepo(s, args.repo)] : s.repo ? [targetRepo(s, s.repo)] : (s.repos ?? []).map((r) => parseRepo(r)!);
      if (scope.length && REPO_QUALIFIER.test(args.query)) {
        throw new Error("the query may not choose repos (repo:, org:, user:, owner:): pass the repo argument instead; nothing was searched");
      }
      const q = [
        args.query,
        ...scope.map((r) => `repo:${r.full}`),
        ...(args.type ? [args.type === "pr" ? "is:pull-request" : "is:issue"] : KIND_QUALIFIER.test(args.query) ? [] : ["is:issue"]),
        ...(args.state ? [`is:${args.state}`] : []),
      ].join(" ");
      const gh = githubClient(api, s, ctx.signal);
      const what = `the search ${JSON.stringify(q)}`;
      try {
        const { data } = await gh.octokit.rest.search.issuesAndPullRequests({ q, per_page: args.limit, ...(args.sort && { sort: args.sort, order: "desc" as const }) });
        const items = data.items as unknown as IssueData[];
        // GitHub applied the repo: qualifiers; this keeps a hit outside them out all the same.
        const inScope = items.filter((i) => (scope.length ? scope.some((r) => r.full.toLowerCase() === repoOfUrl(i.repository_url).toLowerCase()) : isAllowed(s, repoOfUrl(i.repository_url))));
        const dropped = items.length - inScope.length;
        const lines = [
          inScope.length
            ? `${data.total_count} match${data.total_count === 1 ? "" : "es"} for ${JSON.stringify(q)}${data.total_count > inScope.length ? `; showing ${inScope.length}` : ""}${data.incomplete_results ? " (GitHub says the results are incomplete)" : ""}:`
            : `No matches for ${JSON.stringify(q)}.`,
          ...inScope.map(hitLine),
          ...(dropped ? [`(${dropped} hit${dropped === 1 ? "" : "s"} outside the allowed repos left out)`] : []),
        ];
        return {
          text: gh.scrub(lines.join("\n")),
          details: { query: q, total: data.total_count, items: inScope.map((i) => ({ repo: repoOfUrl(i.repository_url), number: i.number, title: i.title, state: i.state, pullRequest: Boolean(i.pull_request), url: i.html_url })) },
        };
      } catch (e) {
        throw explainGithubError(e, { what, settings: s, client: gh, ...(scope.length === 1 && { repo: scope[0] }) });
      }
    },
  };
}

export function getTool(api: CustomToolApi, known: Known): MomTool<ReturnType<typeof getParams>> {
  return {
    id: "github.issue.get",
    risk: "read",
    description: "Read one GitHub issue or pull request: title, state, labels, author, body and its latest comments (long texts are cut).",
    parameters: getParams(known),
    timeoutMs: TIMEOUT_MS,
    async execute(args, ctx) {
      const s = loadSettings(api);
      const repo = targetRepo(s, args.repo);
      const gh = githubClient(api, s, ctx.signal);
      const what = `${repo.full}#${args.number}`;
      try {
        const target = { owner: repo.owner, repo: repo.name, issue_number: args.number };
        const { data } = await gh.octokit.rest.issues.get(target);
        const issue = data as unknown as IssueData;
        const comments = args.comments > 0 && issue.comments > 0 ? await lastComments(gh.octokit, target, issue.comments, args.comments) : [];
        return {
          text: gh.scrub(issueText(repo, issue, comments)),
          details: { repo: repo.full, number: issue.number, state: issue.state, pullRequest: Boolean(issue.pull_request), url: issue.html_url, comments: issue.comments },
        };
      } catch (e) {
        throw explainGithubError(e, { what, repo, settings: s, client: gh });
      }
    },
  };
}

/** The last `want` of an issue's `total` comments: GitHub lists them oldest first, 100 a page at most. */
async function lastComments(
  octokit: ReturnType<typeof githubClient>["octokit"],
  target: { owner: string; repo: string; issue_number: number },
  total: number,
  want: number,
): Promise<CommentData[]> {
  const per = 100;
  let page = Math.max(1, Math.ceil(total / per));
  const got: CommentData[] = [];
  while (page >= 1 && got.length < want) {
    const { data } = await octokit.rest.issues.listComments({ ...target, per_page: per, page });
    got.unshift(...(data as unknown as CommentData[]));
    if (!data.length && page === 1) break;
    page--;
  }
  return got.slice(-want);
}
