import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { type OAuthCredentials, registerOAuthProvider, unregisterOAuthProvider } from "@mariozechner/pi-ai/oauth";
import { oauthAccessToken } from "@mom/auth";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { startStack, type Stack } from "../support/stack.js";

// An `oauth` profile whose credentials are a pi auth file (`pi-auth:oauth.json`): when the access
// token has expired, the runner gets a fresh one through pi (AuthStorage + pi-ai's OAuth provider
// registry) and pi writes the new tokens back. pi-ai's own Anthropic and OpenAI refreshers post
// to token URLs fixed in their code, so the test registers, through pi-ai's registry, an OAuth
// provider for the fake model provider whose refresh posts to a fake token endpoint on loopback.
let s: Stack | undefined;
let tokenEndpoint: Server;
let tokenUrl: string;
const grants: Record<string, string>[] = [];
let refreshes = 0;

beforeAll(async () => {
  tokenEndpoint = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const form = JSON.parse(body) as Record<string, string>;
      grants.push(form);
      if (form.refresh_token === "revoked") {
        res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: "invalid_grant" }));
        return;
      }
      refreshes++;
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ access_token: `access-${refreshes}`, refresh_token: `refresh-${refreshes}`, expires_in: 3600 }));
    });
  });
  await new Promise<void>((r) => tokenEndpoint.listen(0, "127.0.0.1", r));
  tokenUrl = `http://127.0.0.1:${(tokenEndpoint.address() as { port: number }).port}/oauth/token`;
  registerOAuthProvider({
    id: "fake",
    name: "Fake OAuth",
    login: () => Promise.reject(new Error("no interactive login in tests")),
    async refreshToken(c: OAuthCredentials) {
      const r = await fetch(tokenUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ grant_type: "refresh_token", refresh_token: c.refresh }) });
      if (!r.ok) throw new Error(`token refresh failed: HTTP ${r.status}`);
      const data = (await r.json()) as { access_token: string; refresh_token: string; expires_in: number };
      return { access: data.access_token, refresh: data.refresh_token, expires: Date.now() + data.expires_in * 1000 };
    },
    getApiKey: (c: OAuthCredentials) => c.access,
  });
});
afterAll(async () => {
  unregisterOAuthProvider("fake");
  await new Promise((r) => tokenEndpoint.close(r));
});
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

async function stackWithOAuth(cred: object, extraProfiles: object[] = []): Promise<Stack> {
  s = await startStack({ runner: false });
  writeFileSync(join(s.dataDir, "oauth.json"), JSON.stringify({ fake: { type: "oauth", ...cred } }), { mode: 0o600 });
  writeFileSync(
    join(s.dataDir, "auth-profiles.json"),
    JSON.stringify({ profiles: [{ id: "sub", provider: "fake", type: "oauth", secret: "pi-auth:oauth.json" }, ...extraProfiles] }),
    { mode: 0o600 },
  );
  await s.startRunner();
  return s;
}

describe("oauth profiles", () => {
  it("an expired access token is refreshed once, written back, and used", async () => {
    const st = await stackWithOAuth({ access: "stale-access", refresh: "refresh-0", expires: Date.now() - 1000 });
    const before = grants.length;
    st.llm.enqueue({ text: "first" }, { text: "second" });
    st.type("hello");
    await st.output.waitFor("first");
    st.type("again");
    await st.output.waitFor("second");
    expect(grants.slice(before)).toEqual([{ grant_type: "refresh_token", refresh_token: "refresh-0" }]);
    const fresh = `access-${refreshes}`;
    expect(st.llm.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${fresh}`, `Bearer ${fresh}`]);
    const stored = JSON.parse(readFileSync(join(st.dataDir, "oauth.json"), "utf8")) as { fake: { access: string; refresh: string; expires: number } };
    expect(stored.fake).toMatchObject({ type: "oauth", access: fresh, refresh: `refresh-${refreshes}` });
    expect(stored.fake.expires).toBeGreaterThan(Date.now());
  }, 40_000);

  it("a refresh the endpoint refuses skips the profile for the next credential", async () => {
    const st = await stackWithOAuth({ access: "stale-access", refresh: "revoked", expires: Date.now() - 1000 }, [
      { id: "key", provider: "fake", type: "api_key", secret: "key-0123456789abcdef" },
    ]);
    st.llm.enqueue({ text: "answered with the key" });
    st.type("hello");
    await st.output.waitFor("answered with the key");
    expect(st.llm.requests.map((r) => r.headers.authorization)).toEqual(["Bearer key-0123456789abcdef"]);
    expect(readFileSync(join(st.dataDir, "oauth.json"), "utf8")).toContain('"refresh":"revoked"');
  }, 40_000);

  it("a failed refresh is a one-line error without a token", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mom-oauth-"));
    writeFileSync(join(dir, "oauth.json"), JSON.stringify({ fake: { type: "oauth", access: "stale-access", refresh: "revoked", expires: Date.now() - 1000 } }), { mode: 0o600 });
    const err = await oauthAccessToken("pi-auth:oauth.json", "fake", dir).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    // pi-ai keeps only its own line of a refresher's error (the cause is dropped there).
    expect(err?.message).toBe("the fake OAuth token expired and could not be refreshed: Failed to refresh OAuth token for fake");
    expect(err?.message).not.toMatch(/revoked|stale-access/);
    await expect(oauthAccessToken("pi-auth:oauth.json", "other", dir)).rejects.toThrow(/has no OAuth credentials for other/);
    rmSync(dir, { recursive: true, force: true });
  });
});
