import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import { busOptions } from "@mom/bus";
import { createLogger, loadConfig } from "@mom/config";
import { type RunningConsole, startConsole } from "@mom/console";
import { parseChannelKey, parsePayload, qualifiedChannelId, Receipt, validator } from "@mom/contracts";
import { toolsCommand } from "@mom/cli";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { connectionOf } from "../../libs/bus/src/bus.js"; // the NATS handles behind a Bus: tests and benches only
import { eventually } from "../support/processes.js";
import { answering, RunnerCluster } from "../support/runner-cluster.js";
import { startStack, type Stack, type StackOptions } from "../support/stack.js";

// The web console in Debian's Chromium, against real NATS, a real runner and the scripted model.
const CHROMIUM = "/usr/bin/chromium";
const unavailable = !existsSync(CHROMIUM);
if (unavailable) process.stderr.write(`console.test.ts skipped: ${CHROMIUM} is missing (apt-get install chromium)\n`);

/** Screenshots of each page (the test output; docs/console/ holds copies). */
const SHOTS = join(process.cwd(), "test-output", "console");

const ALICE = "alice-token-0123456789abcdef";
const VICTOR = "victor-token-0123456789abcdef";
const config = {
  policy: { ask: ["bash"] },
  adapters: { cli: { type: "cli", admins: ["u-admin"] } },
  console: {
    users: {
      alice: { role: "approver", token: ALICE, as: { cli: "u-admin" } },
      victor: { role: "viewer", token: VICTOR, as: { cli: "u-admin" } },
    },
  },
};

const bashCall = (command: string, label: string) => ({ toolCalls: [{ name: "bash", arguments: { label, command } }] });

/**
 * A reverse proxy as oauth2-proxy is one: `/oauth2/sign_in?user=<name>` stands for its OIDC login
 * and sets its session cookie; every other request goes to the console with the session's user in
 * `header` (a header of that name from the browser is dropped), or without it when there is none.
 */
async function identityProxy(upstream: string, header: string): Promise<{ url: string; close(): Promise<void> }> {
  const target = new URL(upstream);
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://proxy");
    if (url.pathname === "/oauth2/sign_in") {
      res.writeHead(302, { "set-cookie": `_oauth2_proxy=${encodeURIComponent(url.searchParams.get("user") ?? "")}; Path=/; HttpOnly`, location: "/" });
      return void res.end();
    }
    const session = /(?:^|;\s*)_oauth2_proxy=([^;]*)/.exec(req.headers.cookie ?? "")?.[1];
    const headers = { ...req.headers };
    delete headers[header.toLowerCase()];
    if (session) headers[header.toLowerCase()] = decodeURIComponent(session);
    const out = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on("error", () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

/** A workspace tool (workspace/tools/greet/index.ts) whose answer names its greeting. */
const greeter = (greeting: string) => `import Type from "typebox";
export default {
  id: "demo.greeting.say",
  description: "Greets someone by name",
  risk: "read",
  parameters: Type.Object({ name: Type.String() }),
  async execute(args) {
    return "${greeting}, " + args.name + "!";
  },
};
`;

/** Asks the model to call the greeting tool until what it saw passes `want` (the runner reloads tools within ~2 s); returns that. */
async function callUntil(st: Stack, want: string | ((saw: string) => boolean)): Promise<string> {
  const ok = typeof want === "string" ? (t: string) => t.includes(want) : want;
  const deadline = Date.now() + 20_000;
  for (;;) {
    st.llm.enqueue({ toolCalls: [{ name: "invoke_tool", arguments: { label: "Greet", tool: "demo.greeting.say", args: { name: "ana" } } }] }, (req) => ({ text: `saw: ${JSON.stringify(req.messages.at(-1))}` }));
    st.output.text = "";
    st.type("greet ana");
    await st.output.waitFor("saw:");
    if (ok(st.output.text)) return st.output.text;
    if (Date.now() > deadline) throw new Error(`the tool never answered as wanted (${String(want)}): ${st.output.text}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

async function streamReceipts(st: Stack): Promise<Receipt[]> {
  const stream = st.bus.subjects.stream("RECEIPTS");
  const info = await connectionOf(st.bus).jsm.streams.info(stream);
  const out: Receipt[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await connectionOf(st.bus).jsm.streams.getMessage(stream, { seq });
    const r = parsePayload(validator(Receipt), m.data);
    if (r.ok) out.push(r.value);
  }
  return out;
}

async function receiptsUntil(st: Stack, done: (rs: Receipt[]) => boolean): Promise<Receipt[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const rs = await streamReceipts(st);
    if (done(rs) || Date.now() > deadline) return rs;
    await new Promise((r) => setTimeout(r, 100));
  }
}

(unavailable ? describe.skip : describe)("web console in Chromium (real NATS, runner, scripted model)", () => {
  let context: BrowserContext;
  let profile: string;
  let s: Stack | undefined;
  let c: RunningConsole | undefined;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    profile = mkdtempSync(join(tmpdir(), "mom-console-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1100, height: 900 },
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
  }, 60_000);
  afterAll(async () => {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
  });
  afterEach(async () => {
    for (const p of context.pages()) await p.close();
    await context.clearCookies();
    await c?.close();
    await s?.stop();
    c = undefined;
    s = undefined;
  });

  async function up(o: Partial<StackOptions> = {}): Promise<{ st: Stack; console: RunningConsole }> {
    s = await startStack({ ...o, config: { ...config, ...(o.config as object) } } as StackOptions);
    const logger = createLogger("console-e2e", { level: "warn" });
    c = await startConsole({ loaded: s.loaded, bus: busOptions(s.loaded, s.nats.url, "console", logger), logger, port: 0, host: "127.0.0.1", retryMs: 200 });
    return { st: s, console: c };
  }

  async function signIn(url: string, token: string): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${url}/login`);
    await page.getByLabel("Login token").fill(token);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${url}/`);
    return page;
  }

  it("an approval given in the browser runs the tool in the channel; the run page shows the receipts in order", async () => {
    const { st, console: con } = await up();
    // Not signed in: the console sends the browser to its sign-in page.
    const first = await context.newPage();
    await first.goto(`${con.url}/`);
    expect(new URL(first.url()).pathname).toBe("/login");
    const page = await signIn(con.url, ALICE);
    st.llm.enqueue(bashCall("echo console-approved-output", "Say it"), { text: "ran it" });
    st.type("please run");
    await page.goto(`${con.url}/approvals`);
    const card = page.locator("[data-approval]");
    await card.waitFor({ timeout: 15_000 });
    // What will run, as the chat adapters show it.
    await expect(card.getByTestId("approval-args").textContent()).resolves.toBe("echo console-approved-output");
    await expect(card.textContent()).resolves.toContain("Approval needed: mom wants to run bash (destructive), asked by @tester");
    await page.screenshot({ path: join(SHOTS, "approvals.png"), fullPage: true });
    await card.getByRole("button", { name: /Approve once/ }).click();
    await page.waitForURL(/\/approvals\?sent=/);
    await st.output.waitForAnswer("ran it");
    expect(JSON.stringify(st.llm.requests[1]!.messages)).toContain("console-approved-output");
    const rs = await receiptsUntil(st, (r) => r.some((x) => x.type === "tool.call.succeeded"));
    expect(rs.map((r) => r.type).filter((t) => t.startsWith("tool."))).toEqual(["tool.call.requested", "tool.call.approved", "tool.call.started", "tool.call.succeeded"]);
    expect(rs.find((r) => r.type === "tool.call.approved")!.actor).toBe("@alice (console)");
    // The card leaves the page once the runner has taken the decision (live, no reload).
    await page.getByTestId("no-approvals").waitFor({ timeout: 10_000 });

    // The run page: every receipt of the run, in the order the stream holds them, with their ids.
    const runId = rs[0]!.runId;
    await page.goto(`${con.url}/channels/cli/local/runs/${runId}`);
    const shown = await page.locator('[data-kind="receipt"] [data-id-kind="receipt"], [data-kind="delivery"] [data-id-kind="receipt"]').allTextContents();
    // The answer's delivery receipt (the terminal records one; bus only, not receipts.jsonl) may be
    // on the page already: after the tool's receipts, never among them.
    const delivery = shown.filter((id) => id.endsWith(":delivery"));
    // (The stream read above may hold it too, or not yet.)
    const tools = rs.filter((r) => r.runId === runId && !r.receiptId.endsWith(":delivery")).map((r) => r.receiptId);
    expect(shown.slice(0, shown.length - delivery.length)).toEqual(tools);
    expect(delivery.length).toBeLessThanOrEqual(1);
    const kinds = await page.locator("[data-kind]").evaluateAll((els) => els.map((e) => e.getAttribute("data-kind")));
    expect(kinds[0]).toBe("trigger");
    expect(kinds).toEqual(expect.arrayContaining(["start", "model", "approval", "decision", "tool", "receipt", "usage", "end"]));
    await expect(page.locator("[data-kind=decision]").first().textContent()).resolves.toContain("alice (console) (u-admin) chose allow-once");
    await page.screenshot({ path: join(SHOTS, "run.png"), fullPage: true });
    // The channel page links the run and shows the conversation as `mom replay` does.
    await page.goto(`${con.url}/channels/cli/local`);
    await expect(page.getByTestId("replay").textContent()).resolves.toContain("tester → mom: please run");
    await page.getByTestId("channel-runs").getByRole("link").first().waitFor();
    await page.screenshot({ path: join(SHOTS, "channel.png"), fullPage: true });
  }, 90_000);

  it("a denied approval does not run the tool; a viewer sees the call but cannot decide; a cross-site POST is refused", async () => {
    const { st, console: con } = await up();
    st.llm.enqueue(bashCall("echo must-not-run > marker", "Write marker"), { text: "not run" });
    st.type("please run");
    const viewer = await signIn(con.url, VICTOR);
    await viewer.goto(`${con.url}/approvals`);
    const seen = viewer.locator("[data-approval]");
    await seen.waitFor({ timeout: 15_000 });
    await expect(seen.getByRole("button").count()).resolves.toBe(0);
    await expect(seen.textContent()).resolves.toContain('victor is a viewer: console.users.victor.role must be "approver" to decide.');
    const id = (await seen.getAttribute("data-approval"))!;
    // The viewer's session posting anyway (same origin): refused by the console, nothing published.
    const asViewer = await viewer.request.post(`${con.url}/approvals/${encodeURIComponent(id)}`, { form: { decision: "allow-once" }, headers: { origin: con.url } });
    expect(asViewer.status()).toBe(403);
    // Another site making the browser post: refused before any handler (Nest's CSRF protection).
    const forged = await fetch(`${con.url}/approvals/${encodeURIComponent(id)}`, {
      method: "POST",
      headers: { origin: "http://evil.test", "sec-fetch-site": "cross-site", "content-type": "application/x-www-form-urlencoded" },
      body: "decision=allow-once",
    });
    expect(forged.status).toBe(403);
    // No sign-in: the pages send you to it, the rest says why.
    const anonymous = await fetch(`${con.url}/approvals`, { redirect: "manual", headers: { accept: "text/html" } });
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get("location")).toBe("/login");

    const page = await signIn(con.url, ALICE);
    await page.goto(`${con.url}/approvals`);
    await page.locator(`[data-approval="${id}"]`).getByRole("button", { name: "Deny" }).click();
    await page.waitForURL(/\/approvals\?sent=/);
    await st.output.waitForAnswer("not run");
    const rs = await receiptsUntil(st, (r) => r.some((x) => x.type === "tool.call.denied"));
    expect(rs.map((r) => r.type).filter((t) => t.startsWith("tool."))).toEqual(["tool.call.requested", "tool.call.denied"]);
    expect(rs[1]!.actor).toBe("@alice (console)");
    expect(existsSync(join(st.loaded.paths.workspaceDir, "marker"))).toBe(false);
    expect(st.output.text).toContain("Denied by @alice (console)");
  }, 90_000);

  it("the overview updates live when a run starts, shows the replica and the channel it owns, at a phone's width", async () => {
    const { st, console: con } = await up();
    const page = await signIn(con.url, ALICE);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByTestId("runners").locator("[data-runner]").first().waitFor({ timeout: 10_000 });
    await expect(page.getByTestId("runs-today").textContent()).resolves.toBe("0");
    st.llm.enqueue(bashCall("echo later", "Wait for me"), { text: "done" });
    st.type("start something");
    // No reload: the SSE fragment brings the run and the channel waiting for its approval.
    await page.waitForFunction(() => document.querySelector('[data-testid="runs-today"]')?.textContent === "1", undefined, { timeout: 15_000 });
    // The run starts before it asks: wait for the state the approval request brings.
    await page.waitForFunction(() => /waiting for approval/.test(document.querySelector('[data-channel="cli/local"] .state')?.textContent ?? ""), undefined, { timeout: 15_000 });
    await page.waitForFunction(() => /owns 1 channel: cli\/local/.test(document.querySelector('[data-testid="runners"]')?.textContent ?? ""), undefined, { timeout: 10_000 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await page.screenshot({ path: join(SHOTS, "overview-phone.png"), fullPage: true });
    await page.setViewportSize({ width: 1100, height: 900 });
    await page.screenshot({ path: join(SHOTS, "overview.png"), fullPage: true });
    // Keyboard: the first Tab reaches the skip link, and the navigation follows.
    await page.keyboard.press("Tab");
    await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe("Skip to content");
    await page.keyboard.press("Tab");
    await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe("Overview");
    await page.goto(`${con.url}/login`);
    await page.screenshot({ path: join(SHOTS, "login.png"), fullPage: true });
  }, 90_000);

  it("a change to one channel re-renders its row alone: the other rows stay the same DOM nodes, focus stays put, a new channel lands in sorted place", async () => {
    const { st, console: con } = await up();
    // Synthetic outbound events, as a runner publishes them, on channels of their own.
    const seqs = new Map<string, number>();
    const publish = (channelId: string, runId: string, event: object) => {
      const seq = seqs.get(runId) ?? 0;
      seqs.set(runId, seq + 1);
      return st.bus.publish(st.bus.subjects.channel("out", { adapter: "bench", channelId }), { runId, seq, ts: new Date().toISOString(), event }, `${runId}:${seq}`);
    };
    const trigger = (id: string) => ({ messageId: `m-${id}`, senderId: "u1", username: "ann", text: "hi" });
    const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
    await publish("aaa", "ra", { type: "run_started", trigger: trigger("ra"), model: "fake/m" });
    await publish("zzz", "rz", { type: "run_started", trigger: trigger("rz"), model: "fake/m" });
    const page = await signIn(con.url, ALICE);
    const row = (c: string) => `[data-channel="bench/${c}"]`;
    await page.locator(row("zzz")).waitFor({ timeout: 10_000 });
    // Mark what is on the page now; a node that is re-rendered loses its mark.
    await page.evaluate(() => {
      for (const el of document.querySelectorAll<HTMLElement>("[data-channel], #overview-body, #today")) el.dataset.mark = "before";
    });
    // Keyboard focus on the other row's link survives the update.
    await page.locator(row("zzz")).getByRole("link", { name: "bench/zzz" }).focus();
    await publish("aaa", "ra", { type: "run_ended", stopReason: "error", errorMessage: "boom", finalText: "", usage, durationMs: 5 });
    await page.waitForFunction((sel) => /idle/.test(document.querySelector(`${sel} .state`)?.textContent ?? ""), row("aaa"), { timeout: 10_000 });
    const after = await page.evaluate(() => ({
      marks: Object.fromEntries([...document.querySelectorAll<HTMLElement>("[data-channel]")].map((el) => [el.dataset.channel, el.dataset.mark ?? "new"])),
      body: document.getElementById("overview-body")?.dataset.mark ?? "new",
      today: document.getElementById("today")?.dataset.mark ?? "new",
      focused: document.activeElement?.closest("[data-channel]")?.getAttribute("data-channel"),
      errors: document.querySelector('[data-testid="errors-today"]')?.textContent,
    }));
    expect(after.marks["bench/aaa"]).toBe("new"); // its row was swapped…
    expect(after.marks["bench/zzz"]).toBe("before"); // …the others were not touched
    expect(after.body).toBe("before"); // nor the page around them
    expect(after.today).toBe("new"); // today's figures came as their own patch
    expect(after.errors).toBe("1");
    expect(after.focused).toBe("bench/zzz");
    // A channel seen for the first time goes between its neighbours, the rest untouched.
    await publish("mmm", "rm", { type: "run_started", trigger: trigger("rm"), model: "fake/m" });
    await page.locator(row("mmm")).waitFor({ timeout: 10_000 });
    const order = await page.evaluate(() => [...document.querySelectorAll<HTMLElement>('[data-channel^="bench/"]')].map((el) => `${el.dataset.channel}:${el.dataset.mark ?? "new"}`));
    expect(order).toEqual(["bench/aaa:new", "bench/mmm:new", "bench/zzz:before"]);
    await expect(page.locator("#channel-count").textContent()).resolves.toBe(String(await page.locator("[data-channel]").count()));
  }, 60_000);

  it("dead letters: a bad payload published on the bus shows up with its reason and its head, hidden characters spelled out", async () => {
    const { st, console: con } = await up();
    const page = await signIn(con.url, VICTOR);
    await page.goto(`${con.url}/dead-letters`);
    await page.getByTestId("no-dead-letters").waitFor();
    // Not JSON, with a right-to-left override that would reorder what a person reads.
    await connectionOf(st.bus).js.publish(st.bus.subjects.channel("in", { adapter: "cli", channelId: "local" }), "{not json \u202e gnp.exe");
    const letter = page.locator("[data-seq]").first();
    for (let i = 0; i < 50 && !(await letter.count()); i++) {
      await new Promise((r) => setTimeout(r, 200));
      await page.reload();
    }
    await expect(letter.getByTestId("dlq-reason").textContent()).resolves.toMatch(/JSON/i);
    await expect(letter.getByTestId("dlq-subject").textContent()).resolves.toBe(st.bus.subjects.channel("in", { adapter: "cli", channelId: "local" }));
    await expect(letter.getByTestId("dlq-payload").textContent()).resolves.toBe("{not json <U+202E> gnp.exe");
    await expect(letter.textContent()).resolves.toContain("refused by agent-runner");
    await letter.getByRole("link", { name: "cli/local" }).waitFor();
    await page.screenshot({ path: join(SHOTS, "dead-letters.png"), fullPage: true });
  }, 60_000);

  it("dead letters: an approver fixes a refused inbound message in the browser; it must pass the contract, goes out under a new msg-id, and the runner answers it", async () => {
    const { st, console: con } = await up();
    const subject = st.bus.subjects.channel("in", { adapter: "cli", channelId: "local" });
    // A ChannelMessage an ingress got wrong: isMention must be a boolean.
    const message = { id: "m-fix-1", channelId: "local", timestamp: new Date().toISOString(), sender: { id: "u-tester", username: "tester", isBot: false }, text: "what is two and two?", attachments: [], isMention: "yes" };
    await connectionOf(st.bus).js.publish(subject, JSON.stringify(message), { msgID: message.id });
    const viewer = await signIn(con.url, VICTOR);
    await viewer.goto(`${con.url}/dead-letters`);
    const letter = viewer.locator("[data-seq]").filter({ hasText: "/isMention" }).first();
    for (let i = 0; i < 50 && !(await letter.count()); i++) {
      await new Promise((r) => setTimeout(r, 200));
      await viewer.reload();
    }
    const seq = Number(await letter.getAttribute("data-seq"));
    await letter.getByRole("link", { name: `Open dead letter #${seq}` }).click();
    await viewer.getByTestId("republish-viewer").waitFor();
    const asViewer = await viewer.request.post(`${con.url}/dead-letters/${seq}/republish`, { form: { payload: JSON.stringify({ ...message, isMention: true }) }, headers: { origin: con.url } });
    expect(asViewer.status()).toBe(403);
    const inBefore = (await st.bus.streamInfo("IN"))!.state.last_seq;

    const page = await signIn(con.url, ALICE);
    await page.goto(`${con.url}/dead-letters/${seq}`);
    const payload = page.getByLabel("Payload (JSON)");
    await expect(payload.inputValue()).resolves.toBe(JSON.stringify(message, null, 2));
    // Still wrong: said with the contract's own words, and nothing is published.
    await payload.fill(JSON.stringify({ ...message, isMention: "true" }));
    await page.getByRole("button", { name: "Check and re-publish" }).click();
    await expect(page.getByTestId("republish-error").textContent()).resolves.toMatch(new RegExp(`^not published: ${subject.replace(/\./g, "\\.")} takes a payload that passes its contract, and this one does not: /isMention: `));
    await expect(payload.inputValue()).resolves.toBe(JSON.stringify({ ...message, isMention: "true" }));
    expect((await st.bus.streamInfo("IN"))!.state.last_seq).toBe(inBefore);
    await page.screenshot({ path: join(SHOTS, "dead-letter.png"), fullPage: true });
    // Fixed: it goes back on its subject and the runner answers it.
    st.llm.enqueue({ text: "Four." });
    await payload.fill(JSON.stringify({ ...message, isMention: true }, null, 2));
    await page.getByRole("button", { name: "Check and re-publish" }).click();
    await page.waitForURL(/\/dead-letters\?republished=/);
    await expect(page.getByTestId("republished-notice").textContent()).resolves.toMatch(new RegExp(`^Dead letter #${seq} re-published by alice \\(console\\) on ${subject.replace(/\./g, "\\.")}: stream sequence \\d+, msg-id dlq-${seq}-[0-9a-f]{16}\\.$`));
    await expect(page.locator(`[data-seq="${seq}"]`).getByTestId("dlq-republished").textContent()).resolves.toContain("Re-published by alice (console)");
    await st.output.waitForAnswer("Four.");
    expect(JSON.stringify(st.llm.requests.at(-1)!.messages)).toContain("what is two and two?");
    const stored = (await st.bus.storedMessage("IN", inBefore + 1))!;
    expect(stored.subject).toBe(subject);
    expect(stored.headers["Nats-Msg-Id"]).toMatch(new RegExp(`^dlq-${seq}-[0-9a-f]{16}$`));
    expect(stored.headers["Mom-Republished-By"]).toBe("alice (console)");
    expect(stored.headers["Mom-Republished-From"]).toBe(`${st.bus.subjects.stream("DLQ")} #${seq}`);
    // The same fix again (a double submit) lands once: the same msg-id, dropped by the stream.
    const again = await page.request.post(`${con.url}/dead-letters/${seq}/republish`, { form: { payload: JSON.stringify({ ...message, isMention: true }) }, headers: { origin: con.url }, maxRedirects: 0 });
    expect(again.status()).toBe(303);
    expect((await st.bus.streamInfo("IN"))!.state.last_seq).toBe(inBefore + 1);
    // A console started since (a restart: nothing in its memory) reads the re-publish back from the
    // stream on the letter's page, so nobody puts the letter back twice by mistake.
    const logger = createLogger("console-e2e-later", { level: "warn" });
    const later = await startConsole({ loaded: st.loaded, bus: busOptions(st.loaded, st.nats.url, "console", logger), logger, port: 0, host: "127.0.0.1", retryMs: 200 });
    try {
      const fresh = await signIn(later.url, VICTOR);
      await fresh.goto(`${later.url}/dead-letters/${seq}`);
      const shown = fresh.getByTestId("dlq-republished");
      await expect(shown.count()).resolves.toBe(1);
      await expect(shown.textContent()).resolves.toMatch(new RegExp(`^Re-published by alice \\(console\\) at .+ \\(stream sequence ${inBefore + 1}, msg-id dlq-${seq}-[0-9a-f]{16}\\)$`));
    } finally {
      await later.close();
    }
  }, 90_000);

  it("spend: a channel over its limit shows as paused with the runner's own words, and usage per channel, adapter and model", async () => {
    const { st, console: con } = await up({ config: { limits: { channels: { "cli/local": { day: { tokens: 30_000 } } }, global: { month: { tokens: 10_000_000 } } } } });
    const page = await signIn(con.url, VICTOR);
    await page.goto(`${con.url}/spend`);
    await page.getByTestId("no-paused").waitFor();
    st.llm.enqueue({ text: "an expensive answer", usage: { input: 50_000, output: 10 } });
    st.type("think hard");
    await st.output.waitForAnswer("an expensive answer");
    // The next message is refused by the runner before any model call: the limit is reached.
    st.type("again");
    await st.output.waitFor(/Token limit reached: this channel \(cli\/local\)/);
    const paused = page.locator('[data-paused="cli/local"]');
    for (let i = 0; i < 50 && !(await paused.count()); i++) {
      await new Promise((r) => setTimeout(r, 200));
      await page.reload();
    }
    await expect(paused.textContent()).resolves.toContain("Token limit reached: this channel (cli/local) has used 50,010 tokens of its 30,000 tokens daily budget");
    await expect(page.locator('[data-budget="limits.channels[\\"cli/local\\"].day"]').textContent()).resolves.toContain("(167%)");
    await expect(page.getByTestId("usage-channel-day").textContent()).resolves.toMatch(/cli\/local\s*1\s*50,010/);
    await expect(page.getByTestId("usage-model-month").textContent()).resolves.toContain("fake/fake-model");
    // A viewer changes nothing: no form, and a post from its session is refused.
    await page.getByTestId("limits-viewer").waitFor();
    const asViewer = await page.request.post(`${con.url}/spend/limits`, { form: { kind: "channel", id: "cli/local", period: "day", action: "lift" }, headers: { origin: con.url } });
    expect(asViewer.status()).toBe(403);

    // An approver raises the channel's daily limit: checked as config.json would be, then in force for the runner.
    const alice = await signIn(con.url, ALICE);
    await alice.goto(`${con.url}/spend`);
    await alice.locator('[data-paused="cli/local"]').waitFor();
    await alice.screenshot({ path: join(SHOTS, "spend.png"), fullPage: true });
    const form = alice.locator('[data-limit-form="limits.channels[\\"cli/local\\"].day"]');
    await form.getByLabel("Tokens").fill("1.5");
    await form.getByRole("button", { name: /^Set / }).click();
    await expect(alice.getByRole("alert").textContent()).resolves.toContain('limits.channels["cli/local"].day: limits/channels/cli~1local/day/tokens:');
    await alice.goto(`${con.url}/spend`);
    await form.getByLabel("Tokens").fill("1000000");
    await form.getByRole("button", { name: /^Set / }).click();
    await alice.waitForURL(/\/spend\?said=/);
    await expect(alice.getByTestId("limit-notice").textContent()).resolves.toBe('limits.channels["cli/local"].day is now 1,000,000 tokens, set by alice (console)');
    await alice.getByTestId("no-paused").waitFor();
    const row = alice.locator('[data-budget="limits.channels[\\"cli/local\\"].day"]');
    await expect(row.textContent()).resolves.toContain("1,000,000 tokens");
    await expect(row.getByTestId("budget-set-by").textContent()).resolves.toMatch(/^alice \(console\), .* \(config\.json: 30,000 tokens\)$/);
    st.llm.enqueue({ text: "answered after the raise" });
    st.type("and now?");
    await st.output.waitForAnswer("answered after the raise");
    // Lifted: no limit at all for that budget; then back to config.json's, which pauses the channel again.
    await alice.locator('[data-limit-form="limits.channels[\\"cli/local\\"].day"]').getByRole("button", { name: /^Lift / }).click();
    await expect(alice.getByTestId("limit-notice").textContent()).resolves.toBe('limits.channels["cli/local"].day lifted by alice (console)');
    await expect(row.textContent()).resolves.toContain("no limit");
    await alice.locator('[data-limit-form="limits.channels[\\"cli/local\\"].day"]').getByRole("button", { name: "Back to config.json" }).click();
    await expect(alice.getByTestId("limit-notice").textContent()).resolves.toBe('limits.channels["cli/local"].day is config.json\'s again');
    await alice.locator('[data-paused="cli/local"]').waitFor();
    await expect(row.getByTestId("budget-set-by").textContent()).resolves.toBe("config.json");
  }, 90_000);
  it("tools: a changed workspace tool shows its diff since the approved version; approving it in the browser makes it callable, bound to what was shown", async () => {
    const { st, console: con } = await up();
    const toolDir = join(st.loaded.paths.workspaceDir, "tools", "greet");
    mkdirSync(toolDir, { recursive: true });
    writeFileSync(join(toolDir, "index.ts"), greeter("Hello"));
    await toolsCommand(["approve", "greet", "--data", st.dataDir]);
    writeFileSync(join(toolDir, "index.ts"), greeter("Servus"));
    // Changed: unloaded until approved again (the approved version too), so neither greets.
    expect(await callUntil(st, (saw) => !saw.includes("Hello, ana!"))).not.toContain("Servus, ana!");

    const viewer = await signIn(con.url, VICTOR);
    await viewer.goto(`${con.url}/tools`);
    const card = viewer.locator('[data-tool="greet"]');
    await expect(card.getByTestId("tool-state").textContent()).resolves.toBe("changed since it was approved");
    await expect(card.textContent()).resolves.toMatch(/approved .* by \S+ \(mom tools approve\)/);
    const diff = await card.getByTestId("tool-diff").textContent();
    expect(diff).toContain('-    return "Hello, " + args.name');
    expect(diff).toContain('+    return "Servus, " + args.name');
    await expect(card.getByRole("button").count()).resolves.toBe(0);
    const sha256 = (await toolsCommand(["list", "--data", st.dataDir])).match(/greet {2}CHANGED.* sha256 ([0-9a-f]{12})/)![1]!;
    await expect(card.textContent()).resolves.toContain(sha256);

    const page = await signIn(con.url, ALICE);
    await page.goto(`${con.url}/tools`);
    await page.screenshot({ path: join(SHOTS, "tools.png"), fullPage: true });
    // What was shown is what gets approved: a change after the page was drawn is refused.
    const shown = await page.locator('[data-tool="greet"] input[name="sha256"]').inputValue();
    writeFileSync(join(toolDir, "index.ts"), greeter("Moin"));
    await page.getByRole("button", { name: "Approve greet as shown" }).click();
    await expect(page.getByRole("alert").textContent()).resolves.toMatch(/^not approved: greet changed since it was reviewed \(sha256 [0-9a-f]{12} reviewed, [0-9a-f]{12} now\): review it again$/);
    expect(shown).toMatch(/^[0-9a-f]{64}$/);
    await page.goto(`${con.url}/tools`);
    await expect(page.locator('[data-tool="greet"]').getByTestId("tool-diff").textContent()).resolves.toContain('+    return "Moin, " + args.name');
    await page.getByRole("button", { name: "Approve greet as shown" }).click();
    await page.waitForURL(/\/tools\?approved=greet/);
    await page.getByTestId("no-tools-waiting").waitFor();
    await expect(page.getByTestId("tools-approved").textContent()).resolves.toContain("by alice (console)");
    const approvals = JSON.parse(readFileSync(join(st.dataDir, "tool-approvals.json"), "utf8")) as { approvals: Record<string, { approvedBy?: string }> };
    expect(approvals.approvals.greet!.approvedBy).toBe("alice (console)");
    await callUntil(st, "Moin, ana!");
  }, 90_000);

  it("sign-in by a trusted identity header behind a reverse proxy: no header is refused, the header's user gets their role, an unknown user is refused", async () => {
    const { st, console: con } = await up({
      config: { console: { identityHeader: "X-Auth-Request-User", users: { alice: { role: "approver", as: { cli: "u-admin" } }, victor: { role: "viewer" } } } },
    });
    // Straight to the console, no header: the pages send you to sign in, which only the proxy can do; the rest is refused.
    const direct = await fetch(`${con.url}/`, { redirect: "manual", headers: { accept: "text/html" } });
    expect(direct.status).toBe(303);
    expect(direct.headers.get("location")).toBe("/login");
    const post = await fetch(`${con.url}/dead-letters/999/republish`, { method: "POST", headers: { origin: con.url, "sec-fetch-site": "same-origin", "content-type": "application/x-www-form-urlencoded" }, body: "payload=%7B%7D" });
    expect(post.status).toBe(401);
    await expect((await fetch(`${con.url}/login`)).text()).resolves.toContain("signs people in through an identity proxy (header X-Auth-Request-User)");
    const proxy = await identityProxy(con.url, "X-Auth-Request-User");
    try {
      // The proxy's own sign-in (an OIDC login in oauth2-proxy) sets its session; it then sends the header on every request.
      const as = async (who: string) => {
        const page = await context.newPage();
        await page.goto(`${proxy.url}/oauth2/sign_in?user=${who}`);
        return page;
      };
      const viewer = await as("victor");
      await viewer.goto(`${proxy.url}/`);
      await expect(viewer.locator("header .who span").textContent()).resolves.toBe("victor (viewer)");
      // Live updates come through the proxy too (the SSE stream).
      await viewer.getByTestId("runners").locator("[data-runner]").first().waitFor({ timeout: 10_000 });
      await viewer.goto(`${proxy.url}/channels/cli/local`);
      await viewer.getByTestId("redrive-viewer").waitFor();
      const viewerPost = await viewer.request.post(`${proxy.url}/dead-letters/999/republish`, { form: { payload: "{}" }, headers: { origin: proxy.url } });
      expect(viewerPost.status()).toBe(403);
      await context.clearCookies();

      const approver = await as("alice");
      await approver.goto(`${proxy.url}/channels/cli/local`);
      await expect(approver.locator("header .who span").textContent()).resolves.toBe("alice (approver)");
      await approver.getByTestId("redrive-form").waitFor();
      // Past the role check: the approver's post gets as far as "no such dead letter".
      const approverPost = await approver.request.post(`${proxy.url}/dead-letters/999/republish`, { form: { payload: "{}" }, headers: { origin: proxy.url } });
      expect(approverPost.status()).toBe(404);
      await context.clearCookies();

      const stranger = await as("mallory");
      const refused = await stranger.goto(`${proxy.url}/`);
      expect(refused!.status()).toBe(403);
      await expect(refused!.text()).resolves.toContain("mallory is not a console user (console.users in config.json)");
    } finally {
      await proxy.close();
    }
    // The header counts only on connections from console.trustedProxies (default: loopback, where this proxy is).
    // A console told its proxy is elsewhere ignores the same header sent from here: the sign-in page again.
    const logger = createLogger("console-e2e", { level: "warn" });
    const elsewhere = { ...st.loaded, config: { ...st.loaded.config, console: { ...st.loaded.config.console, trustedProxies: ["10.0.0.0/8"] } } };
    const strict = await startConsole({ loaded: elsewhere, bus: busOptions(elsewhere, st.nats.url, "console", logger), logger, port: 0, host: "127.0.0.1", retryMs: 200 });
    try {
      const forged = await fetch(`${strict.url}/`, { redirect: "manual", headers: { accept: "text/html", "x-auth-request-user": "alice" } });
      expect(forged.status).toBe(303);
      expect(forged.headers.get("location")).toBe("/login");
      const trusted = await fetch(`${con.url}/`, { redirect: "manual", headers: { accept: "text/html", "x-auth-request-user": "alice" } });
      expect(trusted.status).toBe(200);
    } finally {
      await strict.close();
    }
  }, 60_000);

  it("the live overview shows a replica leaving (SIGKILL) and its channels moving to the other one, without a reload", async () => {
    // Two `mom runner` processes on one NATS and workspace (lease 4 s), the console in this process.
    const cluster = await RunnerCluster.start({}, { config: { console: config.console } });
    try {
      cluster.llm.setFallback(answering(0, 50));
      await cluster.addRunner();
      await cluster.addRunner();
      const channels = ["c1", "c2", "c3", "c4"];
      for (const ch of channels) await cluster.publish(ch, 1);
      await cluster.waitForAnswers(channels.length, 30_000);
      // Spread evenly once both are up (docs/scaling.md): each owns some.
      const spread = await eventually(async () => (await cluster.channelsOf("r1")).length > 0 && (await cluster.channelsOf("r2")).length > 0, 30_000, 250);
      expect(spread).toBe(true);
      const loaded = loadConfig(cluster.dataDir, {});
      const logger = createLogger("console-e2e", { level: "warn" });
      c = await startConsole({ loaded, bus: busOptions(loaded, cluster.nats.url, "console", logger), logger, port: 0, host: "127.0.0.1", retryMs: 200 });
      const page = await signIn(c.url, ALICE);
      const owner = (ch: string) => page.locator(`[data-channel="cli/${ch}"] td`).nth(2).textContent();
      await page.locator('[data-runner="r1"]').waitFor({ timeout: 10_000 });
      await page.locator('[data-runner="r2"]').waitFor({ timeout: 10_000 });
      const moving = (await cluster.channelsOf("r1")).map((k) => qualifiedChannelId(parseChannelKey(k)));
      for (const ch of moving) await expect(owner(ch.slice("cli/".length))).resolves.toBe("r1");
      await expect(page.locator('[data-runner="r1"]').textContent()).resolves.toContain(`owns ${moving.length} channel`);
      await page.screenshot({ path: join(SHOTS, "overview-replicas.png"), fullPage: true });
      // A mark that a reload would wipe.
      await page.evaluate(() => ((window as unknown as { stayed: boolean }).stayed = true));

      cluster.runner("r1").child.kill("SIGKILL");
      await cluster.runner("r1").exited;
      // Its heartbeat expires after the lease; the other replica takes its channels over.
      await page.locator('[data-runner="r1"]').waitFor({ state: "detached", timeout: 30_000 });
      for (const ch of moving) {
        await page.waitForFunction((sel) => document.querySelector(sel)?.querySelectorAll("td")[2]?.textContent === "r2", `[data-channel="${ch}"]`, { timeout: 30_000 });
      }
      await page.waitForFunction(() => /owns 4 channels/.test(document.querySelector('[data-runner="r2"]')?.textContent ?? ""), undefined, { timeout: 15_000 });
      await expect(page.getByTestId("runners").locator("[data-runner]").count()).resolves.toBe(1);
      await expect(page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).resolves.toBe(true);
      await page.screenshot({ path: join(SHOTS, "overview-replica-gone.png"), fullPage: true });
      // A moved channel is answered by its new owner.
      await cluster.publish(moving[0]!.slice("cli/".length), 2);
      await cluster.waitForAnswers(channels.length + 1, 30_000);
    } finally {
      await c?.close();
      c = undefined;
      await cluster.stop();
    }
  }, 150_000);

  it("redrive: an approver redrives the last hour against the scripted model and sees both answers; a viewer gets no form and a 403", async () => {
    const { st, console: con } = await up();
    st.llm.enqueue({ text: "The recorded answer." });
    st.type("what is in the box?");
    await st.output.waitForAnswer("The recorded answer.");
    const logBefore = readFileSync(join(st.loaded.paths.workspaceDir, "channels/cli/local/log.jsonl"), "utf8");
    const outBefore = (await connectionOf(st.bus).jsm.streams.info(st.bus.subjects.stream("OUT"))).state.messages;
    const scratchBefore = readdirSync(tmpdir()).filter((n) => n.startsWith("mom-console-redrive-"));

    // The viewer sees the channel but no form, and a same-origin POST from its session is refused.
    const viewer = await signIn(con.url, VICTOR);
    await viewer.goto(`${con.url}/channels/cli/local`);
    await viewer.getByTestId("redrive-viewer").waitFor();
    await expect(viewer.getByTestId("redrive-form").count()).resolves.toBe(0);
    const asViewer = await viewer.request.post(`${con.url}/channels/cli/local/redrive`, { form: { window: "1h" }, headers: { origin: con.url } });
    expect(asViewer.status()).toBe(403);
    await expect(asViewer.text()).resolves.toContain("victor is a viewer: console.users.victor.role must be &quot;approver&quot; to redrive.");
    const requestsBefore = st.llm.requests.length;

    const page = await signIn(con.url, ALICE);
    await page.goto(`${con.url}/channels/cli/local`);
    // A window that is neither a duration nor a count: said plainly, no model call.
    await page.getByLabel(/^Window/).fill("yesterday-ish");
    await page.getByRole("button", { name: "Redrive" }).click();
    await expect(page.getByRole("alert").textContent()).resolves.toContain('window: expected a duration back from now (30m, 1h, 1d) or a message count (20), got "yesterday-ish"');
    // A model no provider knows: named, no model call.
    await page.goto(`${con.url}/channels/cli/local`);
    await page.getByLabel(/^Model/).fill("nosuch/model");
    await page.getByRole("button", { name: "Redrive" }).click();
    await expect(page.getByRole("alert").textContent()).resolves.toMatch(/^model: .*nosuch/);
    expect(st.llm.requests.length).toBe(requestsBefore);

    // The model takes its time, so that a second redrive comes while the first runs.
    st.llm.enqueue({ text: "A different, redriven answer.", delayMs: 1500 });
    await page.goto(`${con.url}/channels/cli/local`);
    await page.getByLabel(/^Window/).fill("1h");
    await page.getByLabel(/^Model/).fill("fake/fake-model");
    const submitted = page.getByRole("button", { name: "Redrive" }).click();
    for (let i = 0; i < 100 && st.llm.requests.length === requestsBefore; i++) await new Promise((r) => setTimeout(r, 50));
    const second = await page.request.post(`${con.url}/channels/cli/local/redrive`, { form: { window: "1h" }, headers: { origin: con.url } });
    expect(second.status()).toBe(409);
    await expect(second.text()).resolves.toContain("a redrive is already running (cli/local for alice); this console runs one at a time");
    await submitted;
    await page.waitForURL(/\/redrive$/);
    const item = page.locator("[data-redrive]");
    await expect(item.count()).resolves.toBe(1);
    await expect(item.textContent()).resolves.toContain("tester: what is in the box?");
    await expect(item.getByTestId("recorded-text").textContent()).resolves.toBe("The recorded answer.");
    await expect(item.getByTestId("recorded").textContent()).resolves.toMatch(/fake\/fake-model,\s*stop/);
    await expect(item.getByTestId("redrive-text").textContent()).resolves.toBe("A different, redriven answer.");
    await expect(item.getByTestId("redriven").textContent()).resolves.toMatch(/Redrive \(fake\/fake-model, stop\)[\s\S]* in · [\d,]+ out/);
    expect(JSON.stringify(st.llm.requests.at(-1)!.messages)).toContain("what is in the box?");
    await page.screenshot({ path: join(SHOTS, "redrive.png"), fullPage: true });
    // Nothing live touched: the channel's log and the outbound stream are as they were; the scratch dir is gone.
    expect(readFileSync(join(st.loaded.paths.workspaceDir, "channels/cli/local/log.jsonl"), "utf8")).toBe(logBefore);
    expect((await connectionOf(st.bus).jsm.streams.info(st.bus.subjects.stream("OUT"))).state.messages).toBe(outBefore);
    expect(readdirSync(tmpdir()).filter((n) => n.startsWith("mom-console-redrive-"))).toEqual(scratchBefore);
  }, 90_000);
  it("redrive: a redrive past the console's timeout is stopped and says so; the scratch dir is removed", async () => {
    const { st, console: first } = await up();
    await first.close();
    const logger = createLogger("console-e2e", { level: "warn" });
    c = await startConsole({ loaded: st.loaded, bus: busOptions(st.loaded, st.nats.url, "console", logger), logger, port: 0, host: "127.0.0.1", retryMs: 200, redriveTimeoutMs: 3_000 });
    st.llm.enqueue({ text: "Recorded." });
    st.type("take your time");
    await st.output.waitForAnswer("Recorded.");
    const scratchBefore = readdirSync(tmpdir()).filter((n) => n.startsWith("mom-console-redrive-"));
    st.llm.enqueue({ text: "too late", delayMs: 10_000 });
    const page = await signIn(c.url, ALICE);
    await page.goto(`${c.url}/channels/cli/local`);
    const started = Date.now();
    await page.getByRole("button", { name: "Redrive" }).click();
    await page.waitForURL(/\/redrive$/);
    expect(Date.now() - started).toBeLessThan(9_000);
    await expect(page.getByTestId("redrive-timeout").textContent()).resolves.toContain("the redrive took longer than 3 seconds and was stopped");
    await expect(page.locator("[data-redrive]").getByTestId("redriven").textContent()).resolves.toContain("aborted");
    expect(readdirSync(tmpdir()).filter((n) => n.startsWith("mom-console-redrive-"))).toEqual(scratchBefore);
  }, 60_000);
});
