import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { metrics, readiness } from "@mom/observability";
import { DM_REFUSAL } from "@mom/render";
import { GatewayOp } from "@mom/testing";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ADAPTER, controlMessages, type DiscordStack, eventually, IDS, inboundMessages, inboundMsgIds, startDiscordStack } from "../support/discord-stack.js";

const readJsonl = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)) : []);
const channelDir = (s: DiscordStack, channelId: string) => join(s.loaded.paths.workspaceDir, "channels", ADAPTER, channelId);
const logOf = (s: DiscordStack, channelId: string) => readJsonl(join(channelDir(s, channelId), "log.jsonl"));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The bot message that became the answer `text` (content exactly). */
const answer = (s: DiscordStack, channelId: string, text: string) =>
  eventually(() => s.discord.botMessages(channelId).find((m) => m.content === text), `the answer "${text.slice(0, 40)}" in ${channelId}`);

describe("Discord ingress end to end (fake Discord gateway + REST, real NATS, runner, fake LLM)", () => {
  let s: DiscordStack;
  beforeAll(async () => {
    s = await startDiscordStack({
      adapter: { dm: [IDS.ana], admins: [IDS.carol] },
      fake: { replayOverlap: 3 },
      // `edit` needs an approver (carol, the admin); the other tools run freely.
      config: { attachments: { maxBytes: 64 * 1024 }, policy: { ask: ["edit"] } },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("connects like a bot: gateway from /gateway/bot, IDENTIFY with the intents it needs, heartbeats acknowledged", async () => {
    const { discord } = s;
    expect(discord.rest.calls[0]).toMatchObject({ method: "GET", path: "/gateway/bot", authorization: `Bot ${discord.token}` });
    const identify = discord.gateway.calls.find((f) => f.dir === "in" && f.op === GatewayOp.Identify)!;
    expect(identify.path).toBe("/gateway");
    const intents = (identify.d as { intents: number }).intents;
    for (const bit of [1 << 0, 1 << 9, 1 << 12, 1 << 15]) expect(intents & bit).toBe(bit); // guilds, guild messages, DMs, message content
    expect(intents & (1 << 1)).toBe(0); // no privileged member list
    await discord.gateway.waitFor((f) => f.dir === "in" && f.op === GatewayOp.Heartbeat, { what: "heartbeat" });
    await discord.gateway.waitFor((f) => f.dir === "out" && f.op === GatewayOp.HeartbeatAck, { what: "heartbeat ack" });
  });

  it("a mention: progress in a reply, then the answer with @mentions as <@id>, usage, and tool details in a thread", async () => {
    s.llm.enqueue(
      { toolCalls: [{ name: "bash", arguments: { label: "List the files", command: "echo one.txt two.txt" } }] },
      // slower than the 1 s edit coalescing, so the progress edit is seen before the answer
      { text: "Found 2 files for @ana: `one.txt` and `two.txt`.", delayMs: 1500 },
    );
    const trigger = s.discord.say({ channelId: IDS.general, author: s.users.ana, content: `${s.mention} list the files` });
    const final = await answer(s, IDS.general, `Found 2 files for <@${IDS.ana}>: \`one.txt\` and \`two.txt\`.`);

    // the bus saw the mention with names instead of ids; rawText keeps Discord's text
    const [inbound] = await inboundMessages(s.bus, IDS.general);
    expect(inbound).toMatchObject({
      id: trigger.id,
      channelId: IDS.general,
      text: "@mom list the files",
      rawText: `<@${s.discord.bot.id}> list the files`,
      sender: { id: IDS.ana, username: "ana", displayName: "Ana Lopez", isBot: false },
      isMention: true,
      isDirect: false,
      attachments: [],
    });
    expect(JSON.stringify(s.llm.requests[0]!.messages)).toContain("[@ana]: @mom list the files");

    // one main message: a reply to the trigger, showing progress, edited into the answer
    expect(final.message_reference?.message_id).toBe(trigger.id);
    expect(final.history[0]!.content).toBe("⏳ Working…");
    expect(final.history.map((h) => h.content).join("\n")).toMatch(/(→ List the files|✓ List the files \([\d.]+ m?s\))/);
    expect(final.embeds[0]!.footer!.text).toMatch(/ in · .* out · \$\? · /);
    expect(s.discord.rest.calls.some((c) => c.method === "POST" && c.path === `/channels/${IDS.general}/typing`)).toBe(true);
    const post = s.discord.rest.calls.find((c) => c.method === "POST" && c.path === `/channels/${IDS.general}/messages` && c.body?.content === "⏳ Working…")!;
    expect(post.body.allowed_mentions).toEqual({ parse: [], replied_user: false });

    // details: a thread on the main message with one embed per tool call
    const thread = await eventually(() => s.discord.channel(final.id), "the details thread");
    expect(thread).toMatchObject({ type: 11, parent_id: IDS.general, name: "Details: @mom list the files" });
    const details = await eventually(() => s.discord.botMessages(thread.id)[0], "details in the thread");
    expect(details.embeds[0]).toMatchObject({ title: "✓ List the files" });
    expect(details.embeds[0]!.description).toContain("one.txt two.txt");
    expect(JSON.stringify(details.embeds[0]!.fields)).toContain("echo one.txt two.txt");
  });

  it("other messages in a channel are logged for context but not answered", async () => {
    const before = s.llm.requests.length;
    const chat = s.discord.say({ channelId: IDS.general, author: s.users.bob, content: `the deploy is at 5pm, right <@${IDS.ana}>?` });
    await eventually(() => logOf(s, IDS.general).find((e) => e.id === chat.id), "bob's line in log.jsonl");
    const logged = logOf(s, IDS.general).find((e) => e.id === chat.id);
    expect(logged).toMatchObject({ userName: "bob", text: "the deploy is at 5pm, right @ana?", isMention: false });
    await sleep(200);
    expect(s.llm.requests.length).toBe(before);

    s.llm.enqueue({ text: "At 5pm." });
    s.discord.say({ channelId: IDS.general, author: s.users.ana, content: `${s.mention} when is the deploy?` });
    const at5 = await answer(s, IDS.general, "At 5pm.");
    expect(JSON.stringify(s.llm.requests.at(-1)!.messages)).toContain("the deploy is at 5pm, right @ana?");

    // a reply to mom that pings it is a mention too
    s.llm.enqueue({ text: "UTC." });
    const reply = s.discord.say({ channelId: IDS.general, author: s.users.ana, content: "which time zone?", replyTo: at5.id });
    await answer(s, IDS.general, "UTC.");
    expect((await inboundMessages(s.bus, IDS.general)).find((m) => m.id === reply.id)).toMatchObject({ isMention: true, text: "which time zone?" });
  });

  it("in a thread: the message belongs to the parent channel with replyTo = thread, and mom answers in the thread", async () => {
    const thread = s.discord.addThread(IDS.general, "planning");
    await sleep(50); // THREAD_CREATE reaches the client
    s.llm.enqueue({ toolCalls: [{ name: "bash", arguments: { label: "Check the calendar", command: "echo free" } }] }, { text: "Tuesday works." });
    const m = s.discord.say({ channelId: thread.id, author: s.users.ana, content: `${s.mention} when can we meet?` });
    const final = await answer(s, thread.id, "Tuesday works.");
    expect(final.message_reference?.message_id).toBe(m.id);
    const inbound = (await inboundMessages(s.bus, IDS.general)).find((x) => x.id === m.id);
    expect(inbound).toMatchObject({ channelId: IDS.general, replyTo: thread.id, isMention: true });
    // no thread inside a thread: the details follow the answer in the thread
    const after = await eventually(() => s.discord.botMessages(thread.id).find((x) => x.embeds[0]?.title === "✓ Check the calendar"), "details after the answer");
    expect(BigInt(after.id) > BigInt(final.id)).toBe(true);
    expect(s.discord.channel(final.id)).toBeUndefined();
  });

  it("DMs follow the dm policy: refused with one line, allowed ones answered in the DM, admins always allowed", async () => {
    const before = s.llm.requests.length;
    const bobDm = s.discord.dmChannel(s.users.bob);
    const refused = s.discord.say({ channelId: bobDm.id, author: s.users.bob, content: "hi mom, can you help?" });
    const refusal = await eventually(() => s.discord.botMessages(bobDm.id)[0], "the refusal");
    expect(refusal.content).toBe(DM_REFUSAL);
    expect(refusal.message_reference?.message_id).toBe(refused.id);
    expect(await inboundMessages(s.bus, bobDm.id)).toEqual([]);

    s.llm.enqueue({ text: "Hello Ana." }, { text: "Hello Carol." });
    const anaDm = s.discord.dmChannel(s.users.ana);
    s.discord.say({ channelId: anaDm.id, author: s.users.ana, content: "hello" });
    await answer(s, anaDm.id, "Hello Ana.");
    const [dm] = await inboundMessages(s.bus, anaDm.id);
    expect(dm).toMatchObject({ channelId: anaDm.id, isDirect: true, isMention: true, text: "hello" });

    const carolDm = s.discord.dmChannel(s.users.carol);
    s.discord.say({ channelId: carolDm.id, author: s.users.carol, content: "hello" });
    await answer(s, carolDm.id, "Hello Carol.");
    expect(s.llm.requests.length).toBe(before + 2);
    expect(s.discord.botMessages(bobDm.id)).toHaveLength(1);
  });

  it("a dropped gateway socket: resumes on resume_gateway_url, gets what it missed, publishes nothing twice", async () => {
    const { discord } = s;
    const seen = discord.say({ channelId: IDS.general, author: s.users.carol, content: "before the drop" });
    await eventually(() => logOf(s, IDS.general).find((e) => e.id === seen.id), "carol's line in the log");
    const lastSeq = Math.max(...discord.gateway.calls.filter((f) => f.dir === "out" && f.s).map((f) => f.s!));
    discord.dropConnections();
    // while the socket is down
    const chat = discord.say({ channelId: IDS.general, author: s.users.bob, content: "anyone there?" });
    s.llm.enqueue({ text: "I'm back." });
    const ask = discord.say({ channelId: IDS.general, author: s.users.ana, content: `${s.mention} are you there?` });

    const resume = await discord.gateway.waitFor((f) => f.dir === "in" && f.op === GatewayOp.Resume, { what: "RESUME" });
    expect(resume[0]!.path).toBe("/gateway-resume");
    expect(resume[0]!.d).toMatchObject({ token: discord.token, seq: lastSeq });
    await answer(s, IDS.general, "I'm back.");
    expect(discord.gateway.calls.some((f) => f.dir === "out" && f.t === "RESUMED")).toBe(true);
    expect(discord.gateway.calls.filter((f) => f.dir === "in" && f.op === GatewayOp.Identify)).toHaveLength(1);
    // the fake replayed events the client had already seen (replayOverlap: 3), carol's message among them
    const replayed = discord.gateway.calls.filter((f) => f.dir === "out" && f.path === "/gateway-resume" && f.t === "MESSAGE_CREATE" && f.s! <= lastSeq);
    expect(replayed.map((f) => (f.d as { id: string }).id)).toContain(seen.id);

    const inbound = await inboundMessages(s.bus, IDS.general);
    const ids = inbound.map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining([seen.id, chat.id, ask.id]));
    expect(logOf(s, IDS.general).filter((e) => e.id === seen.id)).toHaveLength(1);
    // the msg-id is the Discord message id (qualified by the adapter): a second publish of it is dropped by JetStream
    expect(await inboundMsgIds(s.bus, IDS.general)).toEqual(ids.map((id) => `${ADAPTER}:${IDS.general}:${id}`));
    const again = await s.bus.publish(s.bus.subjects.channel("in", { adapter: ADAPTER, channelId: IDS.general }), inbound.find((m) => m.id === ask.id), `${ADAPTER}:${IDS.general}:${ask.id}`);
    expect(again.duplicate).toBe(true);
    expect(discord.botMessages(IDS.general).filter((m) => m.content === "I'm back.")).toHaveLength(1);
  });

  it("a 5,000-character answer arrives as messages of at most 2,000 characters, code blocks whole", async () => {
    const code = ["```python", ...Array.from({ length: 40 }, (_, i) => `print("row ${i}: ${"x".repeat(20)}")`), "```"].join("\n");
    const prose = (n: number) => Array.from({ length: n }, (_, i) => `Sentence ${i} of a long explanation.`).join(" ");
    const text = `${prose(45)}\n\n${code}\n\n${prose(50)}`;
    expect(text.length).toBeGreaterThan(4500);
    s.llm.enqueue({ text });
    const trigger = s.discord.say({ channelId: IDS.random, author: s.users.ana, content: `${s.mention} explain at length` });
    await eventually(() => s.discord.botMessages(IDS.random).some((m) => m.embeds[0]?.footer), "the last piece (with usage)");
    const pieces = s.discord.botMessages(IDS.random).map((m) => m.content);
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    for (const p of pieces) {
      expect(p.length).toBeLessThanOrEqual(2000);
      expect((p.match(/```/g) ?? []).length % 2).toBe(0);
    }
    expect(pieces.join("\n").replace(/```python\n|```|\s/g, "")).toBe(text.replace(/```python\n|```|\s/g, ""));
    expect(s.discord.botMessages(IDS.random)[0]!.message_reference?.message_id).toBe(trigger.id);
    // no request was refused by Discord's limits
    expect(s.discord.rest.calls.filter((c) => c.status >= 400)).toEqual([]);
  });

  it("files in and out: an attachment reaches the agent through the Object Store, the file it attaches is uploaded", async () => {
    const content = "milk\neggs\n";
    s.llm.enqueue(
      (req) => {
        const path = /attachments\/\d+-list\.txt/.exec(JSON.stringify(req.messages.at(-1)))?.[0];
        return { toolCalls: [{ name: "bash", arguments: { label: "Read the list", command: `cat ${path} | tr a-z A-Z > scratch/LIST.txt` } }] };
      },
      { toolCalls: [{ name: "attach", arguments: { label: "Send the list", path: "scratch/LIST.txt", title: "Shouting list" } }] },
      { text: "Here it is, in capitals." },
    );
    const trigger = s.discord.say({
      channelId: IDS.general,
      author: s.users.ana,
      content: `${s.mention} shout this list`,
      attachments: [
        { filename: "list.txt", bytes: content, contentType: "text/plain" },
        { filename: "huge.bin", bytes: "x", size: 10 * 1024 * 1024 },
      ],
    });
    const final = await answer(s, IDS.general, "Here it is, in capitals.");
    const inbound = (await inboundMessages(s.bus, IDS.general)).find((m) => m.id === trigger.id)!;
    expect(inbound.attachments).toEqual([
      { filename: "list.txt", localPath: "", size: content.length, mimeType: "text/plain", objectKey: expect.stringMatching(new RegExp(`^${ADAPTER}/${IDS.general}/[0-9a-f-]{36}/list\\.txt$`)) },
      { filename: "huge.bin", localPath: "", size: 10 * 1024 * 1024, note: "too large: 10 MB > 64 KB limit" },
    ]);
    expect(s.discord.rest.calls.filter((c) => c.path.includes("/huge.bin"))).toEqual([]); // never downloaded
    const saved = readdirSync(join(channelDir(s, IDS.general), "attachments")).filter((f) => f.endsWith("-list.txt"));
    expect(readFileSync(join(channelDir(s, IDS.general), "attachments", saved[0]!), "utf8")).toBe(content);

    expect(final.attachments).toHaveLength(1);
    expect(final.attachments[0]).toMatchObject({ filename: "LIST.txt" });
    expect(final.attachments[0]!.bytes.toString()).toBe(content.toUpperCase());
    const upload = s.discord.rest.calls.find((c) => c.method === "PATCH" && c.files.length)!;
    expect(upload.files[0]).toMatchObject({ field: "files[0]", filename: "LIST.txt" });
    expect(upload.body.attachments).toEqual([{ id: 0, filename: "LIST.txt" }]);
  });

  it("`@mom stop` aborts the running run (the runner decides it from the message) and the main message says so", async () => {
    s.llm.enqueue({ hang: true });
    const asked = s.llm.requests.length;
    s.discord.say({ channelId: IDS.random, author: s.users.ana, content: `${s.mention} count to a billion` });
    const main = await eventually(() => s.discord.botMessages(IDS.random).find((m) => m.content === "⏳ Working…"), "the progress message");
    // Stopped before its model call, the run would leave the hanging answer queued for the next test.
    await s.llm.waitForRequests(asked + 1);
    const stop = s.discord.say({ channelId: IDS.random, author: s.users.bob, content: `${s.mention} stop` });
    await eventually(() => s.discord.message(main.id)!.content.includes("■ _Stopped"), "the stopped note");
    const ctl = await controlMessages(s.bus, IDS.random);
    expect(ctl.filter((c) => c.type === "abort")).toEqual([]);
    expect((await inboundMessages(s.bus, IDS.random)).find((m) => m.id === stop.id)).toMatchObject({ text: "@mom stop", isMention: true });
  });

  it("approvals: Allow once / Deny buttons ping the approvers; only they can decide; the prompt shows the outcome", async () => {
    s.llm.enqueue(
      { toolCalls: [{ name: "write", arguments: { label: "Draft the plan", path: "scratch/plan.txt", content: "draft\n" } }] },
      { toolCalls: [{ name: "edit", arguments: { label: "Finalise the plan", path: "scratch/plan.txt", oldText: "draft", newText: "final" } }] },
      { text: "The plan is final." },
    );
    s.discord.say({ channelId: IDS.random, author: s.users.ana, content: `${s.mention} finalise the plan` });
    const prompt = await eventually(() => s.discord.botMessages(IDS.random).find((m) => m.components.length > 0), "the approval prompt");
    expect(prompt.content).toContain("🔐 **Approval needed**: mom wants to run `edit`");
    expect(prompt.content).toContain(`Who can decide: <@${IDS.carol}>`);
    expect(prompt.mentions.map((u) => u.id)).toContain(IDS.carol);
    const buttons = (prompt.components[0] as { components: Array<{ label: string; custom_id: string }> }).components;
    expect(buttons.map((b) => b.label)).toEqual(["Allow once", "Deny"]);

    // bob is not an approver: told so privately, and the prompt stays
    const byBob = s.discord.click(prompt.id, buttons[0]!.custom_id, s.users.bob);
    await eventually(() => byBob.responses[0], "the answer to bob's click");
    expect(byBob.responses[0]).toMatchObject({ type: 4, data: { content: `Only <@${IDS.carol}> can decide this.`, flags: 64 } });
    await sleep(200);
    expect(s.discord.message(prompt.id)!.components).toHaveLength(1);

    const byCarol = s.discord.click(prompt.id, buttons[0]!.custom_id, s.users.carol);
    await eventually(() => byCarol.responses[0], "the answer to carol's click");
    expect(byCarol.responses[0]!.type).toBe(6);
    const final = await answer(s, IDS.random, "The plan is final.");
    expect(s.discord.message(prompt.id)).toMatchObject({ components: [] });
    expect(s.discord.message(prompt.id)!.content).toMatch(/✓ Allowed once by <@900000000000000003>\.$/);
    expect(readFileSync(join(channelDir(s, IDS.random), "scratch", "plan.txt"), "utf8")).toBe("final\n");
    expect(final.embeds[0]!.description).toContain("✓ `edit` — Finalise the plan: succeeded");
    const decisions = (await controlMessages(s.bus, IDS.random)).filter((c) => c.type === "approval_decision");
    expect(decisions.map((d) => d.type === "approval_decision" && d.decidedBy.username)).toEqual(["bob", "carol"]);
  });

  it("a wrong bot token stops the service at start with a message that says so", async () => {
    const { discordIngress } = await import("@mom/ingress-discord");
    const { startIngress } = await import("@mom/ingress-sdk");
    const { busOptions } = await import("@mom/bus");
    const logger = (await import("@mom/config")).createLogger("e2e-bad-token", { level: "silent" });
    await expect(
      startIngress(discordIngress, {
        adapter: { adapter: "discord-bad", access: {}, maxAttachmentBytes: 1024, settings: { botToken: "not-the-token", apiUrl: s.discord.apiUrl } },
        bus: busOptions(s.loaded, s.nats.url, "ingress-bad", logger),
        logger,
      }),
    ).rejects.toThrow('discord adapter "discord-bad": could not connect to Discord: An invalid token was provided.');
  });

  it("rate limits: 429s with Retry-After are waited out by discord.js's queue, nothing lost or reordered", async () => {
    const limited = async () => (await metrics.platformRateLimits.get()).values.find((v) => v.labels.adapter === ADAPTER)?.value ?? 0;
    const limitedBefore = await limited();
    s.discord.rateLimit({ method: "POST", path: /\/messages$/, count: 2, retryAfterSeconds: 0.3 });
    s.discord.rateLimit({ method: "PATCH", count: 1, retryAfterSeconds: 0.2 });
    const text = Array.from({ length: 3 }, (_, i) => `Part ${i}: ${"word ".repeat(380)}`).join("\n\n");
    s.llm.enqueue({ text });
    const since = s.discord.rest.calls.length;
    s.discord.say({ channelId: IDS.general, author: s.users.ana, content: `${s.mention} long again` });
    const last = await eventually(() => s.discord.botMessages(IDS.general).find((m) => m.content.startsWith("Part 2:")), "the last part");
    const calls = s.discord.rest.calls.slice(since).filter((c) => c.path.startsWith(`/channels/${IDS.general}/messages`));
    expect(calls.filter((c) => c.status === 429)).toHaveLength(3);
    const parts = s.discord.botMessages(IDS.general).filter((m) => /^Part \d:/.test(m.content));
    expect(parts.map((m) => m.content.slice(0, 7))).toEqual(["Part 0:", "Part 1:", "Part 2:"]);
    expect(last.embeds[0]?.footer).toBeDefined();
    expect(await limited()).toBeGreaterThan(limitedBefore);
  });

  // Last: it closes the gateway for good.
  it("is ready while its gateway is up, and not ready once Discord closes it for good", async () => {
    expect(readiness()).toEqual({ ready: true });
    s.discord.closeConnections(4004);
    const down = await eventually(() => {
      const r = readiness();
      return r.ready ? undefined : r;
    }, "readiness to drop");
    expect(down.reason).toMatch(new RegExp(`^ingress-${ADAPTER}: Discord gateway `));
  });
});
