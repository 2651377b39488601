import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createLogger, loadConfig } from "@mom/config";
import { busOptions } from "@mom/bus";
import { startConfiguredIngress } from "@mom/ingress-sdk";
import { telegramIngress } from "@mom/ingress-telegram";
import { metrics } from "@mom/observability";
import { DM_REFUSAL } from "@mom/render";
import { freePort } from "@mom/testing";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "../support/discord-stack.js";
import { inboundMessages } from "../support/inbound.js";
import { controlMessagesOf } from "../support/streams.js";
import { startTelegramStack, TG, TG_ADAPTER, type TelegramStack } from "../support/telegram-stack.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("Telegram ingress end to end (fake Bot API, unmodified grammY, real NATS, runner, fake LLM)", () => {
  let s: TelegramStack;
  beforeAll(async () => {
    s = await startTelegramStack({
      adapter: { dm: "none", admins: [String(TG.carol.id)] },
      config: { attachments: { maxBytes: 64 * 1024 }, policy: { ask: ["edit"] } },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  const inbound = async (chatId: number) => (await inboundMessages(s.bus)).filter((m) => m.channelId === String(chatId));
  /** The bot message whose visible text is `text`, or matches it. */
  const botText = (chatId: number, text: string | RegExp) =>
    eventually(() => s.telegram.botMessages(chatId).find((m) => (typeof text === "string" ? m.text === text : text.test(m.text ?? ""))), `bot text ${String(text)} in ${chatId}`);
  const controls = (chatId: number) => controlMessagesOf(s.bus, { adapter: TG_ADAPTER, channelId: String(chatId) });

  it("group: every message is logged, a mention gets a progress reply that becomes the answer (Telegram HTML)", async () => {
    s.telegram.say({ chat: TG.team, from: TG.bob, text: "the build is red again" });
    s.llm.enqueue(
      { toolCalls: [{ name: "bash", arguments: { label: "Check the build", command: "echo red" } }] },
      { text: "The build is **red**: `make test` fails <sometimes>.", delayMs: 600 },
    );
    const trigger = s.telegram.say({ chat: TG.team, from: TG.ana, ...s.telegram.mention("why is the build red?") });
    const final = await botText(TG.team.id, /^The build is red: make test fails <sometimes>\./);
    expect(final.sentText).toMatch(/^The build is <b>red<\/b>: <code>make test<\/code> fails &lt;sometimes&gt;\./);
    expect(final.parseMode).toBe("HTML");
    expect(final.reply_to_message?.message_id).toBe(trigger.message_id);
    expect(final.versions[0]).toBe("⏳ Working…");
    expect(final.versions.some((v) => v.includes("✓ Check the build"))).toBe(true);
    expect(final.text).toMatch(/📊 \d[\d,]* in · \d+ out/);
    const msgs = await inbound(TG.team.id);
    expect(msgs.map((m) => [m.text, m.isMention])).toEqual([
      ["the build is red again", false],
      ["@mom_test_bot why is the build red?", true],
    ]);
    expect(msgs[1]).toMatchObject({ id: String(trigger.message_id), sender: { id: String(TG.ana.id), username: "ana", displayName: "Ana Lopez", isBot: false }, isDirect: false });
    expect(s.telegram.calls.some((c) => c.method === "sendChatAction" && c.params.action === "typing")).toBe(true);
  });

  it("a long command's latest output line shows in the progress message while it runs", async () => {
    s.llm.enqueue({ toolCalls: [{ name: "bash", arguments: { label: "Run the suite", command: "for i in 1 2 3 4 5 6; do echo \"tick $i\"; sleep 0.8; done" } }] }, { text: "Suite done." });
    s.telegram.say({ chat: TG.team, from: TG.ana, ...s.telegram.mention("run the suite") });
    const final = await botText(TG.team.id, /^Suite done\./);
    const ticks = new Set(final.versions.flatMap((v) => /→ Run the suite\n\s+(tick \d)/.exec(v)?.[1] ?? []));
    expect(ticks.size).toBeGreaterThanOrEqual(2);
  }, 30_000);

  it("a progress message a group admin deleted mid-run: the progress and the answer are posted anew, not lost", async () => {
    s.llm.enqueue({ toolCalls: [{ name: "bash", arguments: { label: "Count slowly", command: "sleep 2; echo done" } }] }, { text: "Counted." });
    const trigger = s.telegram.say({ chat: TG.team, from: TG.ana, ...s.telegram.mention("count slowly") });
    const progress = await botText(TG.team.id, /→ Count slowly/);
    s.telegram.message(TG.team.id, progress.message_id)!.deleted = true;
    const final = await botText(TG.team.id, /^Counted\./);
    expect(final.message_id).not.toBe(progress.message_id);
    expect(final.reply_to_message?.message_id).toBe(trigger.message_id);
  }, 30_000);

  it("a reply to one of mom's messages triggers it too; a forum topic is answered in its topic", async () => {
    const mine = s.telegram.botMessages(TG.team.id).at(-1)!;
    s.llm.enqueue({ text: "Yes, still red." });
    s.telegram.say({ chat: TG.team, from: TG.ana, text: "still?", replyTo: mine.message_id });
    await botText(TG.team.id, /^Yes, still red\./);

    s.llm.enqueue({ text: "Topic answer." });
    s.telegram.say({ chat: TG.forum, from: TG.ana, threadId: 42, ...s.telegram.mention("in the topic") });
    const answer = await botText(TG.forum.id, /^Topic answer\./);
    expect(answer.message_thread_id).toBe(42);
    expect((await inbound(TG.forum.id))[0]).toMatchObject({ replyTo: "42", isMention: true });
  });

  it("DMs follow the dm policy: refused with one line; admins always allowed", async () => {
    s.telegram.say({ chat: TG.dm(TG.bob), from: TG.bob, text: "hello?" });
    const refusal = await botText(TG.bob.id, DM_REFUSAL);
    expect(refusal.parseMode).toBeUndefined();
    expect(await inbound(TG.bob.id)).toEqual([]);
    s.llm.enqueue({ text: "Hi Carol." });
    s.telegram.say({ chat: TG.dm(TG.carol), from: TG.carol, text: "hi" });
    await botText(TG.carol.id, /^Hi Carol\./);
    expect((await inbound(TG.carol.id))[0]).toMatchObject({ isDirect: true, isMention: true });
  });

  it("files in and out: a document reaches the agent through the Object Store; the file it attaches is sent back", async () => {
    const content = "milk\neggs\n";
    s.llm.enqueue(
      (req) => {
        const path = /attachments\/\d+-list\.txt/.exec(JSON.stringify(req.messages.at(-1)))?.[0];
        return { toolCalls: [{ name: "bash", arguments: { label: "Shout", command: `cat ${path} | tr a-z A-Z > scratch/LIST.txt` } }] };
      },
      { toolCalls: [{ name: "attach", arguments: { label: "Send the list", path: "scratch/LIST.txt", title: "Shouting list" } }] },
      { text: "Here it is." },
    );
    const trigger = s.telegram.say({ chat: TG.team, from: TG.ana, ...s.telegram.mention("shout this"), document: { name: "list.txt", bytes: new TextEncoder().encode(content), mimeType: "text/plain" } });
    await botText(TG.team.id, /^Here it is\./);
    const sent = await eventually(() => s.telegram.botMessages(TG.team.id).find((m) => m.document?.file_name === "LIST.txt"), "the uploaded document");
    expect(new TextDecoder().decode(s.telegram.fileBytes(sent.document!.file_id))).toBe(content.toUpperCase());
    expect(sent.caption).toBe("Shouting list");
    const msg = (await inbound(TG.team.id)).find((m) => m.id === String(trigger.message_id))!;
    expect(msg.attachments).toEqual([{ filename: "list.txt", localPath: "", size: content.length, mimeType: "text/plain", objectKey: expect.stringMatching(/^telegram\/-100200\/.+\/list\.txt$/) }]);
    expect(s.telegram.calls.some((c) => c.method === "getFile")).toBe(true);
  });

  it("approvals: inline Allow once / Deny; a non-approver gets an alert; the prompt shows the outcome", async () => {
    s.llm.enqueue(
      { toolCalls: [{ name: "write", arguments: { label: "Draft", path: "scratch/plan.txt", content: "draft\n" } }] },
      { toolCalls: [{ name: "edit", arguments: { label: "Finalise", path: "scratch/plan.txt", oldText: "draft", newText: "final" } }] },
      { text: "The plan is final." },
    );
    s.telegram.say({ chat: TG.team, from: TG.ana, ...s.telegram.mention("finalise the plan") });
    const prompt = await eventually(() => s.telegram.botMessages(TG.team.id).find((m) => m.reply_markup?.inline_keyboard.length), "the approval prompt");
    expect(prompt.text).toContain("🔐 Approval needed: mom wants to run edit (write), asked by @ana");
    expect(prompt.text).toContain(`Who can decide: ${TG.carol.id}`);
    const [allow, deny] = prompt.reply_markup!.inline_keyboard[0]!;
    expect([allow!.text, deny!.text]).toEqual(["Allow once", "Deny"]);

    const byBob = await s.telegram.click(TG.team.id, prompt.message_id, allow!.callback_data!, TG.bob);
    expect(byBob).toMatchObject({ text: `Only ${TG.carol.id} can decide this.`, show_alert: true });
    await sleep(200);
    expect(s.telegram.message(TG.team.id, prompt.message_id)!.reply_markup).toBeDefined();

    const byCarol = await s.telegram.click(TG.team.id, prompt.message_id, allow!.callback_data!, TG.carol);
    expect(byCarol.text).toBeUndefined();
    await botText(TG.team.id, /^The plan is final\./);
    const closed = s.telegram.message(TG.team.id, prompt.message_id)!;
    expect(closed.reply_markup).toBeUndefined();
    expect(closed.text).toMatch(/✓ Allowed once by @carol\.$/);
    const workspace = s.loaded.paths.workspaceDir;
    expect(readFileSync(join(workspace, "channels", TG_ADAPTER, String(TG.team.id), "scratch", "plan.txt"), "utf8")).toBe("final\n");
    const decisions = (await controls(TG.team.id)).filter((c) => c.type === "approval_decision");
    expect(decisions.map((d) => d.type === "approval_decision" && d.decidedBy.username)).toEqual(["bob", "carol"]);
  });

  it("429 with retry_after is waited out: edits and the answer still land, in order", async () => {
    const rateLimited = async () => (await metrics.platformRateLimits.get()).values.find((v) => v.labels.adapter === TG_ADAPTER)?.value ?? 0;
    const rateLimitedBefore = await rateLimited();
    s.telegram.rateLimit("editMessageText", 2, 1);
    s.llm.enqueue({ toolCalls: [{ name: "bash", arguments: { label: "Slow step", command: "sleep 0.3" } }] }, { text: "Done despite limits." });
    s.telegram.say({ chat: TG.team, from: TG.ana, ...s.telegram.mention("go") });
    const final = await botText(TG.team.id, /^Done despite limits\./);
    const edits = s.telegram.calls.filter((c) => c.method === "editMessageText" && Number(c.params.message_id) === final.message_id);
    expect(edits.filter((c) => c.status === 429).length).toBe(2);
    expect(edits.at(-1)!.status).toBe(200);
    const waited = edits.find((c) => c.status === 200)!.at - edits.find((c) => c.status === 429)!.at;
    expect(waited).toBeGreaterThanOrEqual(900);
    expect(await rateLimited()).toBe(rateLimitedBefore + 2);
  });

  it("a long answer is split into messages within 4,096 characters; `stop` is the runner's (no abort from the ingress)", async () => {
    const para = "word ".repeat(150).trim();
    s.llm.enqueue({ text: Array.from({ length: 8 }, (_, i) => `Part ${i}: ${para}`).join("\n\n") });
    s.telegram.say({ chat: TG.team, from: TG.ana, ...s.telegram.mention("write a lot") });
    await botText(TG.team.id, /Part 7/);
    const parts = s.telegram.botMessages(TG.team.id).filter((m) => /Part \d/.test(m.text ?? ""));
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const p of parts) expect([...(p.text ?? "")].length).toBeLessThanOrEqual(4096);

    s.llm.enqueue({ hang: true });
    const asked = s.llm.requests.length;
    s.telegram.say({ chat: TG.team, from: TG.ana, ...s.telegram.mention("count to a billion") });
    // Stopped before its model call, the run would leave the hanging answer queued for the next test.
    await s.llm.waitForRequests(asked + 1);
    await eventually(() => s.telegram.botMessages(TG.team.id).at(-1)?.text === "⏳ Working…", "the progress message");
    s.telegram.say({ chat: TG.team, from: TG.bob, ...s.telegram.mention("stop") });
    await botText(TG.team.id, /■ Stopped/);
    expect((await controls(TG.team.id)).filter((c) => c.type === "abort")).toEqual([]);
  });

  it("a wrong bot token stops the service at start with a message that says so", async () => {
    const logger = createLogger("e2e-telegram-bad", { level: "silent" });
    const loaded = loadConfig(s.dataDir, { MOM_TEST_TELEGRAM_TOKEN: "999:wrong" }, { adapters: [TG_ADAPTER] });
    await expect(startConfiguredIngress(telegramIngress, loaded, TG_ADAPTER, logger, s.nats.url)).rejects.toThrow(
      /telegram adapter "telegram": the bot token was refused \(getMe: .*Unauthorized/,
    );
  });
});

describe("Telegram ingress in webhook mode", () => {
  let s: TelegramStack;
  let url: string;
  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}/telegram-hook`;
    s = await startTelegramStack({ ingress: { webhookUrl: url, webhookSecret: "hook-secret_1", webhookPort: port, webhookHost: "127.0.0.1" } });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it("registers its webhook with the secret, takes posted updates, and refuses posts without the secret", async () => {
    expect(s.telegram.calls.find((c) => c.method === "setWebhook")!.params).toMatchObject({ url, secret_token: "hook-secret_1", allowed_updates: ["message", "callback_query"] });
    expect(s.telegram.calls.some((c) => c.method === "getUpdates")).toBe(false);
    s.llm.enqueue({ text: "Hooked." });
    const m = s.telegram.say({ chat: TG.dm(TG.ana), from: TG.ana, text: "hi over the hook" });
    await eventually(() => s.telegram.botMessages(TG.ana.id).find((x) => x.text?.startsWith("Hooked.")), "the answer");
    expect(s.telegram.webhookPosts.at(-1)!.status).toBe(200);

    const forged = { update_id: 9999, message: { ...m, message_id: 999, text: "forged" } };
    expect(await s.telegram.postUpdate(forged, "wrong")).toBe(401);
    expect(await s.telegram.postUpdate(forged, "")).toBe(401);
    await sleep(200);
    expect((await inboundMessages(s.bus)).map((x) => x.text)).toEqual(["hi over the hook"]);
  });
});
