// The writes (comment, label, open) and the destructive calls (close, remove a label). Each posts
// as the token's account, so @-mentions in what the model writes are made inert unless the
// operator allows them (mentions.ts).
import Type from "typebox";
import type { CustomToolApi, MomTool, ToolCallContext } from "@mom/tools";
import { explainGithubError, GithubCallError, type GithubClient, githubClient } from "./client.js";
import { type IssueData, labelNames } from "./format.js";
import { defuseMentions } from "./mentions.js";
import { type Known, NumberArg, repoArg, TIMEOUT_MS } from "./read-tools.js";
import { type GithubSettings, loadSettings, type RepoRef, targetRepo } from "./settings.js";

const MAX_BODY = 65_536;
const Body = (description: string) => Type.String({ minLength: 1, maxLength: MAX_BODY, description });
const LabelName = Type.String({ minLength: 1, maxLength: 50, description: "A label's name" });

const commentParams = (known: Known) => Type.Object({ repo: repoArg(known), number: NumberArg, body: Body("The comment, GitHub Markdown") });
const labelParams = (known: Known) => Type.Object({
  repo: repoArg(known),
  number: NumberArg,
  labels: Type.Array(LabelName, { minItems: 1, maxItems: 20, description: "Labels to add (a label the repo lacks is created)" }),
});
const createParams = (known: Known) => Type.Object({
  repo: repoArg(known),
  title: Type.String({ minLength: 1, maxLength: 256, description: "The issue's title" }),
  body: Type.Optional(Body("The issue's text, GitHub Markdown")),
  labels: Type.Optional(Type.Array(LabelName, { maxItems: 20, description: "Labels to set" })),
});
const closeParams = (known: Known) => Type.Object({
  repo: repoArg(known),
  number: NumberArg,
  reason: Type.Union([Type.Literal("completed"), Type.Literal("not_planned")], { default: "completed", description: "completed (done) or not_planned" }),
  comment: Type.Optional(Body("A comment posted before closing, e.g. why")),
});
const removeLabelParams = (known: Known) => Type.Object({ repo: repoArg(known), number: NumberArg, label: LabelName });

interface Call {
  s: GithubSettings;
  repo: RepoRef;
  gh: GithubClient;
}

/** Settings, the target repo (allow-list checked) and a client; GitHub's errors explained for `what`. */
async function withRepo<T>(api: CustomToolApi, ctx: ToolCallContext, repoArg: string | undefined, what: (repo: RepoRef) => string, fn: (c: Call) => Promise<T>): Promise<T> {
  const s = loadSettings(api);
  const repo = targetRepo(s, repoArg);
  const gh = githubClient(api, s, ctx.signal);
  try {
    return await fn({ s, repo, gh });
  } catch (e) {
    throw explainGithubError(e, { what: what(repo), repo, settings: s, client: gh });
  }
}

/** The text to post, and a note for the model when mentions were made inert. */
function outgoing(s: GithubSettings, body: string): { body: string; note: string } {
  if (s.allowMentions) return { body, note: "" };
  const d = defuseMentions(body);
  return { body: d.text, note: d.mentions.length ? `\nMentions notify nobody here (${d.mentions.join(", ")}): they are shown as text; tools.settings.github.allowMentions turns them on.` : "" };
}

const labelList = (labels: IssueData["labels"]) => (labelNames(labels).length ? labelNames(labels).join(", ") : "none");

export function commentTool(api: CustomToolApi, known: Known): MomTool<ReturnType<typeof commentParams>> {
  return {
    id: "github.issue.comment",
    risk: "write",
    description: "Post a comment on a GitHub issue or pull request, as the configured account.",
    parameters: commentParams(known),
    timeoutMs: TIMEOUT_MS,
    execute: (args, ctx) =>
      withRepo(api, ctx, args.repo, (r) => `the comment on ${r.full}#${args.number}`, async ({ s, repo, gh }) => {
        const out = outgoing(s, args.body);
        const { data } = await gh.octokit.rest.issues.createComment({ owner: repo.owner, repo: repo.name, issue_number: args.number, body: out.body });
        return { text: gh.scrub(`Commented on ${repo.full}#${args.number}: ${data.html_url}${out.note}`), details: { repo: repo.full, number: args.number, commentId: data.id, url: data.html_url } };
      }),
  };
}

export function labelTool(api: CustomToolApi, known: Known): MomTool<ReturnType<typeof labelParams>> {
  return {
    id: "github.issue.label",
    risk: "write",
    description: "Add labels to a GitHub issue or pull request (labels it already has are kept; a label the repo lacks is created).",
    parameters: labelParams(known),
    timeoutMs: TIMEOUT_MS,
    execute: (args, ctx) =>
      withRepo(api, ctx, args.repo, (r) => `adding labels to ${r.full}#${args.number}`, async ({ repo, gh }) => {
        const { data } = await gh.octokit.rest.issues.addLabels({ owner: repo.owner, repo: repo.name, issue_number: args.number, labels: args.labels });
        return { text: gh.scrub(`Labelled ${repo.full}#${args.number} with ${args.labels.join(", ")}; its labels now: ${labelList(data)}.`), details: { repo: repo.full, number: args.number, labels: labelNames(data) } };
      }),
  };
}

export function createTool(api: CustomToolApi, known: Known): MomTool<ReturnType<typeof createParams>> {
  return {
    id: "github.issue.create",
    risk: "write",
    description: "Open a new GitHub issue, as the configured account.",
    parameters: createParams(known),
    timeoutMs: TIMEOUT_MS,
    execute: (args, ctx) =>
      withRepo(api, ctx, args.repo, (r) => `the new issue in ${r.full}`, async ({ s, repo, gh }) => {
        const out = args.body === undefined ? undefined : outgoing(s, args.body);
        const { data } = await gh.octokit.rest.issues.create({ owner: repo.owner, repo: repo.name, title: args.title, ...(out && { body: out.body }), ...(args.labels?.length && { labels: args.labels }) });
        return { text: gh.scrub(`Opened ${repo.full}#${data.number}: ${data.html_url}${out?.note ?? ""}`), details: { repo: repo.full, number: data.number, url: data.html_url } };
      }),
  };
}

export function closeTool(api: CustomToolApi, known: Known): MomTool<ReturnType<typeof closeParams>> {
  return {
    id: "github.issue.close",
    risk: "destructive",
    description: "Close a GitHub issue or pull request (as completed or not_planned), optionally with a comment posted first.",
    parameters: closeParams(known),
    timeoutMs: TIMEOUT_MS,
    execute: (args, ctx) =>
      withRepo(api, ctx, args.repo, (r) => `closing ${r.full}#${args.number}`, async ({ s, repo, gh }) => {
        const target = { owner: repo.owner, repo: repo.name, issue_number: args.number };
        let posted = "";
        let note = "";
        if (args.comment !== undefined) {
          const out = outgoing(s, args.comment);
          note = out.note;
          const { data } = await gh.octokit.rest.issues.createComment({ ...target, body: out.body });
          posted = data.html_url;
        }
        try {
          const { data } = await gh.octokit.rest.issues.update({ ...target, state: "closed", state_reason: args.reason });
          return {
            text: gh.scrub(`Closed ${repo.full}#${args.number} as ${args.reason.replace("_", " ")}${posted ? `, after commenting: ${posted}` : ""}.${note}`),
            details: { repo: repo.full, number: args.number, state: data.state, stateReason: data.state_reason, ...(posted && { commentUrl: posted }) },
          };
        } catch (e) {
          if (!posted) throw e;
          const why = explainGithubError(e, { what: `closing ${repo.full}#${args.number}`, repo, settings: s, client: gh }).message;
          throw new GithubCallError(gh.scrub(`The comment was posted (${posted}), but the issue is still open: ${why}`));
        }
      }),
  };
}

export function removeLabelTool(api: CustomToolApi, known: Known): MomTool<ReturnType<typeof removeLabelParams>> {
  return {
    id: "github.label.remove",
    risk: "destructive",
    description: "Remove one label from a GitHub issue or pull request.",
    parameters: removeLabelParams(known),
    timeoutMs: TIMEOUT_MS,
    execute: (args, ctx) =>
      withRepo(api, ctx, args.repo, (r) => `removing the label ${JSON.stringify(args.label)} from ${r.full}#${args.number}`, async ({ repo, gh }) => {
        const { data } = await gh.octokit.rest.issues.removeLabel({ owner: repo.owner, repo: repo.name, issue_number: args.number, name: args.label });
        return { text: gh.scrub(`Removed the label ${JSON.stringify(args.label)} from ${repo.full}#${args.number}; its labels now: ${labelList(data)}.`), details: { repo: repo.full, number: args.number, labels: labelNames(data) } };
      }),
  };
}
