import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { metrics } from "@mom/observability";
import { DM_REFUSAL } from "@mom/render";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "../support/discord-stack.js";
import { inboundMessages } from "../support/inbound.js";
import { controlMessagesOf, receiptsOf } from "../support/streams.js";
import { startWhatsAppStack, WA, WA_ADAPTER, type WhatsAppStack } from "../support/whatsapp-stack.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("WhatsApp ingress end to end (fake Cloud API + signed webhook posts, real NATS, runner, fake LLM)", () => {
  let s: WhatsAppStack;
  beforeAll(async () => {
    s = await startWhatsAppStack({
      adapter: { dm: [WA.ana.waId, WA.dave.waId], admins: [WA.carol.waId] },
      config: { attachments: { maxBytes: 64 * 1024 }, policy: { ask: ["edit"] } },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  const inbound = async (waId: string) => (await inboundMessages(s.bus)).filter((m) => m.channelId === waId);
  const sentText = (waId: string, text: RegExp) => eventually(() => s.whatsapp.sentTo(waId).find((m) => text.test(m.text ?? "")), `a message ${String(text)} to ${waId}`);
  const controls = (waId: string) => controlMessagesOf(s.bus, { adapter: WA_ADAPTER, channelId: String(waId) });

  it("verifies the webhook URL with the verify token only", async () => {
    expect(await s.whatsapp.verify(s.whatsapp.verifyToken, "8472")).toEqual({ status: 200, body: "8472" });
    expect((await s.whatsapp.verify("wrong")).status).toBe(403);
  });

  it("refuses unsigned and badly signed posts, and publishes nothing from them", async () => {
    const body = s.whatsapp.changeFor(WA.ana, { from: WA.ana.waId, id: "wamid.FORGED", timestamp: "1700000000", type: "text", text: { body: "forged" } });
    expect(await s.whatsapp.post(body, undefined)).toBe(401);
    expect(await s.whatsapp.post(body, "sha256=" + "0".repeat(64))).toBe(401);
    const raw = JSON.stringify(body);
    expect(await s.whatsapp.post(raw.replace("forged", "FORGED"), s.whatsapp.sign(raw))).toBe(401);
    await sleep(200);
    expect((await inbound(WA.ana.waId)).filter((m) => m.id === "wamid.FORGED")).toEqual([]);
  });

  it("a text is marked read, published, and answered as a reply with the answer, activity and usage", async () => {
    s.llm.enqueue({ toolCalls: [{ name: "bash", arguments: { label: "Count", command: "echo 3" } }] }, { text: "There are **3** files." });
    const { id, status } = await s.whatsapp.say(WA.ana, { text: "how many files?" });
    expect(status).toBe(200);
    const answer = await sentText(WA.ana.waId, /^There are \*3\* files\./);
    expect(answer.context).toBe(id);
    expect(answer.text).toMatch(/📊 [\d,]+ in · \d+ out/);
    expect(s.whatsapp.reads.some((r) => r.messageId === id && !r.typing)).toBe(true);
    expect(s.whatsapp.reads.some((r) => r.messageId === id && r.typing)).toBe(true);
    expect((await inbound(WA.ana.waId)).find((m) => m.id === id)).toMatchObject({ text: "how many files?", isMention: true, isDirect: true, sender: { id: WA.ana.waId, username: "Ana_Lopez", displayName: "Ana Lopez" } });
    // a retried webhook post of the same message changes nothing
    const raw = JSON.stringify(s.whatsapp.changeFor(WA.ana, { from: WA.ana.waId, id, timestamp: "1700000000", type: "text", text: { body: "how many files?" } }));
    expect(await s.whatsapp.post(raw, s.whatsapp.sign(raw))).toBe(200);
    await sleep(300);
    expect((await inbound(WA.ana.waId)).filter((m) => m.id === id)).toHaveLength(1);
  });

  it("the dm policy refuses people not listed, with one line", async () => {
    await s.whatsapp.say(WA.bob, { text: "hello?" });
    const refusal = await sentText(WA.bob.waId, /only take direct messages/);
    expect(refusal.text).toBe(DM_REFUSAL);
    expect(await inbound(WA.bob.waId)).toEqual([]);
  });

  it("media in through the Graph API into the Object Store; the file the agent attaches goes out as a document", async () => {
    const content = "milk\neggs\n";
    s.llm.enqueue(
      (req) => {
        const path = /attachments\/\d+-list\.txt/.exec(JSON.stringify(req.messages.at(-1)))?.[0];
        return { toolCalls: [{ name: "bash", arguments: { label: "Shout", command: `cat ${path} | tr a-z A-Z > scratch/LIST.txt` } }] };
      },
      { toolCalls: [{ name: "attach", arguments: { label: "Send it", path: "scratch/LIST.txt", title: "Shouting list" } }] },
      { text: "Here it is." },
    );
    const { id } = await s.whatsapp.say(WA.ana, { text: "shout this", media: { kind: "document", bytes: new TextEncoder().encode(content), mimeType: "text/plain", filename: "list.txt" } });
    await sentText(WA.ana.waId, /^Here it is\./);
    const doc = await eventually(() => s.whatsapp.sentTo(WA.ana.waId).find((m) => m.type === "document"), "the document");
    expect(doc.document).toMatchObject({ filename: "LIST.txt", caption: "Shouting list" });
    expect(new TextDecoder().decode(s.whatsapp.mediaBytes(doc.document!.id)!.bytes)).toBe(content.toUpperCase());
    const msg = (await inbound(WA.ana.waId)).find((m) => m.id === id)!;
    expect(msg.attachments).toEqual([{ filename: "list.txt", localPath: "", size: content.length, mimeType: "text/plain", objectKey: expect.stringMatching(/^whatsapp\/4917000000001\/.+\/list\.txt$/) }]);
  });

  it("approvals: reply buttons; a non-approver is told who decides; an approver's tap goes through", async () => {
    s.llm.enqueue(
      { toolCalls: [{ name: "write", arguments: { label: "Draft", path: "scratch/plan.txt", content: "draft\n" } }] },
      { toolCalls: [{ name: "edit", arguments: { label: "Finalise", path: "scratch/plan.txt", oldText: "draft", newText: "final" } }] },
      { text: "The plan is final." },
    );
    await s.whatsapp.say(WA.carol, { text: "finalise the plan" });
    const prompt = await eventually(() => s.whatsapp.sentTo(WA.carol.waId).find((m) => m.type === "interactive"), "the approval prompt");
    expect(prompt.text).toContain("🔐 *Approval needed*: mom wants to run `edit` (write), asked by @Carol");
    expect(prompt.buttons!.map((b) => b.title)).toEqual(["Allow once", "Deny"]);
    await s.whatsapp.clickButton(WA.carol, prompt, "Allow once");
    await sentText(WA.carol.waId, /^The plan is final\./);
    const outcome = await sentText(WA.carol.waId, /Allowed once by/);
    expect(outcome).toMatchObject({ text: "✓ Allowed once by @Carol.", context: prompt.id });
    expect(readFileSync(join(s.loaded.paths.workspaceDir, "channels", WA_ADAPTER, WA.carol.waId, "scratch", "plan.txt"), "utf8")).toBe("final\n");

    // Ana asks: the prompt is in her chat and in Carol's (a WhatsApp chat belongs to one person)
    s.llm.enqueue(
      { toolCalls: [{ name: "write", arguments: { label: "Draft", path: "scratch/plan.txt", content: "draft\n" } }] },
      { toolCalls: [{ name: "edit", arguments: { label: "Finish", path: "scratch/plan.txt", oldText: "draft", newText: "done" } }] },
      { text: "ok, done" },
    );
    const carolPrompts = s.whatsapp.sentTo(WA.carol.waId).filter((m) => m.type === "interactive").length;
    await s.whatsapp.say(WA.ana, { text: "edit the plan" });
    const anaPrompt = await eventually(() => s.whatsapp.sentTo(WA.ana.waId).find((m) => m.type === "interactive"), "ana's prompt");
    const copy = await eventually(() => s.whatsapp.sentTo(WA.carol.waId).filter((m) => m.type === "interactive")[carolPrompts], "carol's copy of the prompt");
    expect(copy.buttons).toEqual(anaPrompt.buttons);
    await s.whatsapp.clickButton(WA.ana, anaPrompt, "Allow once");
    await sentText(WA.ana.waId, new RegExp(`^Only \\+${WA.carol.waId} can decide this\\.$`));
    await s.whatsapp.clickButton(WA.carol, copy, "Allow once");
    await sentText(WA.ana.waId, /^ok, done/);
    expect(readFileSync(join(s.loaded.paths.workspaceDir, "channels", WA_ADAPTER, WA.ana.waId, "scratch", "plan.txt"), "utf8")).toBe("done\n");
    const decisions = (await controls(WA.ana.waId)).filter((c) => c.type === "approval_decision");
    expect(decisions.map((d) => d.type === "approval_decision" && d.decidedBy.id)).toEqual([WA.ana.waId, WA.carol.waId]);
  });

  it("rate limits are waited out; a closed 24-hour window is said clearly and nothing is sent", async () => {
    const rateLimited = async () => (await metrics.platformRateLimits.get()).values.find((v) => v.labels.adapter === WA_ADAPTER)?.value ?? 0;
    const rateLimitedBefore = await rateLimited();
    s.whatsapp.rateLimit(2);
    s.llm.enqueue({ text: "Despite limits." });
    await s.whatsapp.say(WA.carol, { text: "go" });
    await sentText(WA.carol.waId, /^Despite limits\./);
    const limited = s.whatsapp.calls.filter((c) => c.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(2);
    expect(await rateLimited()).toBe(rateLimitedBefore + limited.length);

    // a scheduled event for Carol after her window closed
    s.whatsapp.closeWindow(WA.carol.waId);
    const before = s.whatsapp.sentTo(WA.carol.waId).length;
    s.llm.enqueue({ text: "Reminder: standup." });
    const id = `sched-${Date.now()}`;
    await s.bus.publish(
      s.bus.subjects.channel("in", { adapter: WA_ADAPTER, channelId: WA.carol.waId }),
      { id, channelId: WA.carol.waId, timestamp: new Date().toISOString(), sender: { id: "scheduler", username: "scheduler", isBot: true }, text: "remind carol", attachments: [], isMention: true },
      id,
    );
    await eventually(() => s.llm.requests.some((r) => JSON.stringify(r.messages).includes("remind carol")), "the scheduled run");
    await sleep(800);
    expect(s.whatsapp.sentTo(WA.carol.waId).length).toBe(before);
    expect(s.whatsapp.calls.filter((c) => c.status === 400 && JSON.stringify(c.body).includes("Reminder"))).toHaveLength(1);
  });

  it("times the 24-hour window from when a message was written: one delivered 25 h late is recorded, not answered; a late 131047 says the window line", async () => {
    s.whatsapp.windowErrorsLater = true;
    try {
      const requestsBefore = s.llm.requests.length;
      const { id } = await s.whatsapp.say(WA.dave, { text: "late hello from yesterday", sentAt: Date.now() - 25 * 3600_000 });
      const logged = await eventually(async () => (await inbound(WA.dave.waId)).find((m) => m.id === id), "the late message on the bus");
      expect(logged).toMatchObject({ isMention: false, text: "late hello from yesterday" });
      await s.logs.waitFor(/arrived after its 24-hour window closed; recorded, not answered: the 24-hour customer-service window with 4917000000004 is closed/);
      await sleep(800);
      expect(s.llm.requests.slice(requestsBefore).some((r) => JSON.stringify(r.messages).includes("late hello"))).toBe(false);
      expect(s.whatsapp.calls.filter((c) => c.body.to === WA.dave.waId)).toEqual([]);

      // Someone the ingress never heard from: the send goes out, the Cloud API accepts it and
      // reports 131047 in a status webhook later; the log says the window line, not a vague failure.
      const erin = "4917000000005";
      s.llm.enqueue({ text: "Your weekly reminder." });
      const eid = `sched-${Date.now()}`;
      await s.bus.publish(
        s.bus.subjects.channel("in", { adapter: WA_ADAPTER, channelId: erin }),
        { id: eid, channelId: erin, timestamp: new Date().toISOString(), sender: { id: "scheduler", username: "scheduler", isBot: true }, text: "remind erin", attachments: [], isMention: true },
        eid,
      );
      await eventually(() => s.whatsapp.failedLater.length > 0 || undefined, "a send reported failed later");
      await s.logs.waitFor(new RegExp(`the 24-hour customer-service window with ${erin} is closed: WhatsApp only delivers template messages`));
      expect(s.logs.text).not.toMatch(new RegExp(`could not deliver a message to ${erin}`));
      // What reached the person, on the receipts stream: accepted first, then reported undelivered.
      const deliveries = await eventually(async () => {
        const r = (await receiptsOf(s.bus, { adapter: WA_ADAPTER, channelId: erin })).filter((x) => x.type.startsWith("delivery."));
        return r.length >= 2 ? r : undefined;
      }, "both delivery receipts of erin's answer");
      const sentId = s.whatsapp.failedLater.at(-1)!;
      expect(deliveries.map((d) => [d.type, d.actor])).toEqual([
        ["delivery.succeeded", `ingress-${WA_ADAPTER}`],
        ["delivery.failed", `ingress-${WA_ADAPTER}`],
      ]);
      expect(deliveries[0]!.detail).toBe(`accepted by the platform as ${sentId}`);
      expect(deliveries[1]!.detail).toMatch(new RegExp(`^${sentId}: the 24-hour customer-service window with ${erin} is closed`));
      expect(deliveries[1]!.runId).toBe(deliveries[0]!.runId);
    } finally {
      s.whatsapp.windowErrorsLater = false;
    }
  });
});
