import { afterEach, beforeEach, describe, expect, it } from "@jest/globals";
import { type FakeGithub, startFakeGithub } from "./fake-github.js";

let gh: FakeGithub;
beforeEach(async () => {
  gh = await startFakeGithub();
});
afterEach(() => gh.close());

const get = (path: string, token: string | null = gh.token) => fetch(`${gh.url}${path}`, { headers: token ? { authorization: `token ${token}` } : {} });

describe("fake GitHub REST API", () => {
  it("wants a known token, as GitHub does", async () => {
    gh.addIssue("acme/a", { title: "one" });
    expect((await get("/repos/acme/a/issues/1", null)).status).toBe(401);
    const wrong = await get("/repos/acme/a/issues/1", "nope");
    expect([wrong.status, (await wrong.json()).message]).toEqual([401, "Bad credentials"]);
    expect((await get("/repos/acme/a/issues/1")).status).toBe(200);
    expect(gh.calls.map((c) => c.status)).toEqual([401, 401, 200]);
  });

  it("hides a private repo from a token without access, and refuses writes to a read-only token", async () => {
    gh.addRepo("acme/secret", { private: true });
    gh.addIssue("acme/secret", { title: "hidden" });
    gh.addToken("limited", { repos: ["acme/other"], write: false });
    expect((await get("/repos/acme/secret/issues/1", "limited")).status).toBe(404);
    expect((await get("/search/issues?q=hidden+is:issue", "limited").then((r) => r.json())).total_count).toBe(0);
    gh.addIssue("acme/public", { title: "open to all" });
    const post = await fetch(`${gh.url}/repos/acme/public/issues/1/comments`, { method: "POST", headers: { authorization: "token limited" }, body: JSON.stringify({ body: "hi" }) });
    expect([post.status, (await post.json()).message]).toEqual([403, "Resource not accessible by personal access token"]);
  });

  it("searches with GitHub's qualifiers, wants is:issue or is:pull-request, and pages with a Link header", async () => {
    for (let i = 0; i < 5; i++) gh.addIssue("acme/a", { title: `bug ${i}`, labels: i % 2 ? ["p1"] : [] });
    gh.addIssue("acme/a", { title: "bug fix", pull: {} });
    const missing = await get("/search/issues?q=bug");
    expect([missing.status, (await missing.json()).message]).toEqual([422, "Query must include 'is:issue' or 'is:pull-request'"]);
    const labelled = await get("/search/issues?q=bug+label:p1+is:issue+repo:acme/a").then((r) => r.json());
    expect(labelled.items.map((i: { number: number }) => i.number).sort()).toEqual([2, 4]);
    expect((await get("/search/issues?q=bug+is:pr").then((r) => r.json())).items[0].pull_request).toBeDefined();
    const page = await get("/search/issues?q=bug+is:issue&per_page=2&page=2");
    expect(page.headers.get("link")).toMatch(/page=3>; rel="next", <.*page=3>; rel="last", <.*page=1>; rel="first", <.*page=1>; rel="prev"$/);
    expect((await page.json()).total_count).toBe(5);
  });

  it("answers a transferred issue's old address 301, and the rate limit 403 with its reset", async () => {
    gh.addIssue("acme/a", { title: "moving" });
    gh.transfer("acme/a", 1, "acme/b");
    const moved = await fetch(`${gh.url}/repos/acme/a/issues/1`, { headers: { authorization: `token ${gh.token}` }, redirect: "manual" });
    expect([moved.status, moved.headers.get("location")]).toEqual([301, `${gh.url}/repos/acme/b/issues/1`]);
    gh.rateLimit({ times: 2, resetInSeconds: 90 });
    for (let i = 0; i < 2; i++) {
      const r = await get("/repos/acme/b/issues/1");
      expect([r.status, r.headers.get("x-ratelimit-remaining")]).toEqual([403, "0"]);
      expect(Number(r.headers.get("x-ratelimit-reset")) - Date.now() / 1000).toBeGreaterThan(85);
    }
    expect((await get("/repos/acme/b/issues/1")).status).toBe(200);
  });
});
