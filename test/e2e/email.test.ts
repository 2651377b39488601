import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createLogger, loadConfig } from "@mom/config";
import { emailIngress, ImapMailbox } from "@mom/ingress-email";
import { adapterSettings, startConfiguredIngress } from "@mom/ingress-sdk";
import { DM_REFUSAL } from "@mom/render";
import { busOptions } from "@mom/bus";
import { startScheduler } from "@mom/scheduler";
import { freePort, mailServersUnavailable } from "@mom/testing";
import type { ParsedMail } from "mailparser";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { eventually } from "../support/discord-stack.js";
import { EMAIL_ADAPTER, type EmailStack, MAIL, startEmailStack } from "../support/email-stack.js";
import { inboundMessages } from "../support/inbound.js";
import { controlMessagesOf, outboundEvents, receiptsOf } from "../support/streams.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const bare = (id: string) => id.replace(/^<|>$/g, "");
const unavailable = mailServersUnavailable();
if (unavailable) process.stderr.write(`test/e2e/email.test.ts skipped: ${unavailable}\n`);

(unavailable ? describe.skip : describe)("e-mail ingress end to end (real dovecot + postfix, real NATS, runner, fake LLM)", () => {
  let s: EmailStack;
  beforeAll(async () => {
    s = await startEmailStack({
      adapter: { admins: [MAIL.carol], dm: [MAIL.ana, MAIL.bob, MAIL.ghost], approvalTextLimit: 2000 },
      config: { attachments: { maxBytes: 64 * 1024 }, policy: { ask: ["edit"] }, scheduler: { pollIntervalMs: 200 } },
    });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  const inbound = async () => (await inboundMessages(s.bus)).filter((m) => m.subject.includes(`.${EMAIL_ADAPTER}.`));
  const message = (id: string) => eventually(async () => (await inbound()).find((m) => m.id === bare(id)), `the inbound message ${id}`);
  /** mom's mail to `address` that answers `inReplyTo` (and passes `also`). */
  const answer = (address: string, inReplyTo: string, also: (m: ParsedMail) => boolean = () => true, timeoutMs = 15_000) =>
    eventually(async () => (await s.received(address)).find((m) => m.inReplyTo === inReplyTo && also(m)), `mom's answer to ${inReplyTo} in ${address}'s mailbox`, timeoutMs);
  const seen = (id: string) => eventually(async () => (await s.mail.messages(MAIL.mom)).find((m) => m.messageId === id && m.seen), `${id} marked \\Seen`);
  const logged = (msg: RegExp, id: string) => eventually(() => s.logs.find((l) => msg.test(l.msg) && l.messageId === bare(id)), `the log line ${msg} for ${id}`);

  it("a mail is answered by a reply in its thread: Re: subject, In-Reply-To/References, text and HTML, Cc only to allowed people", async () => {
    s.llm.enqueue({ text: "The build is **red**: `make test` fails <sometimes>." });
    const id = await s.mail.send({ from: `Ana Lopez <${MAIL.ana}>`, to: MAIL.mom, cc: [MAIL.bob, MAIL.eve], subject: "Build status", text: "why is the build red?" });
    const reply = await answer(MAIL.ana, id);
    expect(reply.subject).toBe("Re: Build status");
    expect(reply.references).toEqual(id);
    expect(reply.text).toMatch(/^The build is \*\*red\*\*: `make test` fails <sometimes>\.\n\n_📊 \d[\d,]* in · \d+ out/);
    expect(reply.html).toContain("<strong>red</strong>: <code>make test</code> fails &lt;sometimes&gt;.");
    expect(reply.headers.get("auto-submitted")).toBe("auto-replied");
    expect(reply.to).toMatchObject({ value: [{ address: MAIL.ana }] });
    expect(reply.cc).toMatchObject({ value: [{ address: MAIL.bob }] });
    expect(reply.messageId).toMatch(/^<mom\.[0-9a-f]{24}\.[0-9a-f-]+@mom\.test>$/);
    expect((await s.received(MAIL.bob)).map((m) => m.messageId)).toContain(reply.messageId);
    expect(await s.received(MAIL.eve)).toEqual([]);
    const msg = await message(id);
    expect(msg).toMatchObject({
      text: "Subject: Build status\n\nwhy is the build red?",
      sender: { id: MAIL.ana, username: MAIL.ana, displayName: "Ana Lopez", isBot: false },
      isMention: true,
      isDirect: true,
      replyTo: bare(id),
      attachments: [],
    });
    expect(msg.channelId).toMatch(/^[0-9a-f]{24}$/);
    await seen(id);
  });

  it("a reply in the thread (quoted text left out) lands in the same channel; so does one with only In-Reply-To", async () => {
    const first = (await inbound())[0]!;
    const answered = (await s.received(MAIL.ana))[0]!;
    s.llm.enqueue({ text: "Still red, sorry." });
    const follow = await s.mail.send({
      from: MAIL.ana,
      to: MAIL.mom,
      subject: "Re: Build status",
      inReplyTo: answered.messageId!,
      references: [`<${first.id}>`, answered.messageId!],
      text: `and now?\n\nOn Fri, 27 Nov 2026 at 08:00, mom <${MAIL.mom}> wrote:\n> The build is red.\n`,
    });
    const second = await answer(MAIL.ana, follow);
    expect(second.references).toEqual([`<${first.id}>`, answered.messageId, follow]);
    expect((await message(follow)).channelId).toBe(first.channelId);
    expect((await message(follow)).text).toBe("and now?");

    s.llm.enqueue({ text: "Yes, same thread." });
    const bare1 = await s.mail.send({ from: MAIL.bob, to: MAIL.mom, subject: "Re: Build status", inReplyTo: second.messageId!, text: "same thread?" });
    await answer(MAIL.bob, bare1);
    expect((await message(bare1)).channelId).toBe(first.channelId);
  });

  it("files both ways: an attached file reaches the agent through the Object Store; the file it attaches comes back in the answer's mail", async () => {
    const content = "milk\neggs\n";
    s.llm.enqueue(
      (req) => {
        const path = /attachments\/\d+-list\.txt/.exec(JSON.stringify(req.messages.at(-1)))?.[0];
        return { toolCalls: [{ name: "bash", arguments: { label: "Shout", command: `cat ${path} | tr a-z A-Z > scratch/LIST.txt` } }] };
      },
      { toolCalls: [{ name: "attach", arguments: { label: "Send the list", path: "scratch/LIST.txt", title: "Shouting list" } }] },
      { text: "Here it is." },
    );
    const id = await s.mail.send({ from: MAIL.ana, to: MAIL.mom, subject: "Shopping", text: "shout this", attachments: [{ filename: "list.txt", content, contentType: "text/plain" }] });
    const reply = await answer(MAIL.ana, id);
    expect(reply.text).toMatch(/^Here it is\./);
    expect(reply.attachments.map((a) => [a.filename, a.content.toString()])).toEqual([["LIST.txt", content.toUpperCase()]]);
    const msg = await message(id);
    expect(msg.attachments).toEqual([{ filename: "list.txt", localPath: "", size: content.length, mimeType: "text/plain", objectKey: expect.stringMatching(new RegExp(`^email/${msg.channelId}/.+/list\\.txt$`)) }]);
  });

  it("approvals by code: a stranger's and a wrong code are refused with a reply; the approver's allows; a used code is refused; deny denies", async () => {
    s.llm.enqueue(
      { toolCalls: [{ name: "write", arguments: { label: "Draft", path: "scratch/plan.txt", content: "draft\n" } }] },
      { toolCalls: [{ name: "edit", arguments: { label: "Finalise", path: "scratch/plan.txt", oldText: "draft", newText: "final" } }] },
      { text: "The plan is final." },
    );
    const ask = await s.mail.send({ from: MAIL.ana, to: MAIL.mom, subject: "Plan", text: "finalise the plan" });
    const prompt = await answer(MAIL.carol, ask, (m) => /Approval needed/.test(m.text ?? ""));
    expect(prompt.text).toContain(`🔐 **Approval needed**: mom wants to run \`edit\` (write), asked by @${MAIL.ana}`);
    expect(prompt.text).toContain(`Who can decide: ${MAIL.carol}`);
    const code = /reply to this mail with "approve (\d{8})" or "deny \1" as its first line/.exec(prompt.text ?? "")?.[1];
    expect(code).toBeDefined();
    expect(prompt.to).toMatchObject({ value: [{ address: MAIL.carol }] });
    expect(prompt.cc).toMatchObject({ value: [{ address: MAIL.ana }] });
    const replyTo = (from: string, text: string) => s.mail.send({ from, to: MAIL.mom, subject: `Re: ${prompt.subject}`, inReplyTo: prompt.messageId!, references: [...[prompt.references ?? []].flat(), prompt.messageId!], text });

    const byBob = await replyTo(MAIL.bob, `approve ${code}`);
    expect((await answer(MAIL.bob, byBob)).text).toMatch(new RegExp(`^Only ${MAIL.carol} can decide this\\.`));
    const wrong = await replyTo(MAIL.carol, "approve 12345678");
    expect((await answer(MAIL.carol, wrong)).text).toMatch(/^No approval is waiting for the code 12345678: nothing was decided\./);
    const byCarol = await replyTo(MAIL.carol, `Approve ${code}, go ahead\n\nOn Fri, mom wrote:\n> deny ${code}\n`);
    const final = await answer(MAIL.ana, ask, (m) => /^The plan is final\./.test(m.text ?? ""));
    expect(final.attachments).toEqual([]);
    const outcome = await answer(MAIL.carol, prompt.messageId!);
    expect(outcome.text).toMatch(new RegExp(`✓ Allowed once by @?${MAIL.carol.replace(".", "\\.")}\\.`));
    expect(readFileSync(join(s.loaded.paths.workspaceDir, "channels", EMAIL_ADAPTER, (await message(ask)).channelId, "scratch", "plan.txt"), "utf8")).toBe("final\n");
    const again = await replyTo(MAIL.carol, `approve ${code}`);
    expect((await answer(MAIL.carol, again)).text).toMatch(new RegExp(`^The code ${code} was used already \\(approved by ${MAIL.carol}\\): nothing was decided\\.`));
    const decisions = (await controlMessagesOf(s.bus, { adapter: EMAIL_ADAPTER, channelId: (await message(ask)).channelId })).filter((c) => c.type === "approval_decision");
    expect(decisions.map((d) => d.type === "approval_decision" && [d.decidedBy.id, d.decision])).toEqual([
      [MAIL.bob, "allow-once"],
      [MAIL.carol, "allow-once"],
    ]);
    // None of the decision mails was a message to mom.
    expect((await inbound()).map((m) => m.id)).not.toEqual(expect.arrayContaining([bare(byBob), bare(wrong), bare(byCarol), bare(again)]));

    s.llm.enqueue({ toolCalls: [{ name: "edit", arguments: { label: "Undo", path: "scratch/plan.txt", oldText: "final", newText: "draft" } }] }, { text: "Left as it was." });
    const ask2 = await s.mail.send({ from: MAIL.ana, to: MAIL.mom, subject: "Re: Plan", inReplyTo: final.messageId!, references: [ask, final.messageId!], text: "undo it" });
    const prompt2 = await answer(MAIL.carol, ask2, (m) => /Approval needed/.test(m.text ?? ""));
    const code2 = /"deny (\d{8})"/.exec(prompt2.text ?? "")![1]!;
    await s.mail.send({ from: MAIL.carol, to: MAIL.mom, subject: `Re: ${prompt2.subject}`, inReplyTo: prompt2.messageId!, text: `DENY ${code2}` });
    await answer(MAIL.ana, ask2, (m) => /^Left as it was\./.test(m.text ?? ""));
    expect((await answer(MAIL.carol, prompt2.messageId!)).text).toMatch(/⊘ Denied by/);
    expect((await message(ask2)).channelId).toBe((await message(ask)).channelId);
    expect(readFileSync(join(s.loaded.paths.workspaceDir, "channels", EMAIL_ADAPTER, (await message(ask2)).channelId, "scratch", "plan.txt"), "utf8")).toBe("final\n");
  });

  it("a code mailed before a restart of the ingress still decides its approval after it, and the outcome is mailed; a wrong one still does not; someone who may not decide is told so", async () => {
    s.llm.enqueue(
      { toolCalls: [{ name: "write", arguments: { label: "Draft", path: "scratch/memo.txt", content: "draft\n" } }] },
      { toolCalls: [{ name: "edit", arguments: { label: "Sign", path: "scratch/memo.txt", oldText: "draft", newText: "signed" } }] },
      { text: "The memo is signed." },
    );
    const ask = await s.mail.send({ from: MAIL.ana, to: MAIL.mom, subject: "Memo", text: "sign the memo" });
    const prompt = await answer(MAIL.carol, ask, (m) => /Approval needed/.test(m.text ?? ""));
    const code = /"approve (\d{8})"/.exec(prompt.text ?? "")![1]!;
    await s.stopIngress();
    await s.startIngress();
    const replyTo = (text: string, from = MAIL.carol) => s.mail.send({ from, to: MAIL.mom, subject: `Re: ${prompt.subject}`, inReplyTo: prompt.messageId!, references: [...[prompt.references ?? []].flat(), prompt.messageId!], text });
    const wrong = await replyTo(`approve ${code === "12345678" ? "87654321" : "12345678"}`);
    expect((await answer(MAIL.carol, wrong)).text).toMatch(/^No approval is waiting for the code \d{8}: nothing was decided\./);
    // Who may decide is read back from the bus (the prompt as the runner asked it).
    const byBob = await replyTo(`approve ${code}`, MAIL.bob);
    expect((await answer(MAIL.bob, byBob)).text).toMatch(new RegExp(`^Only ${MAIL.carol} can decide this\\.`));
    const approved = await replyTo(`approve ${code}`);
    await answer(MAIL.ana, ask, (m) => /^The memo is signed\./.test(m.text ?? ""), 30_000);
    // The prompt mail is not in mom's folder: the outcome answers the approver's reply, in the thread.
    const outcome = await answer(MAIL.carol, approved, (m) => /Allowed once/.test(m.text ?? ""));
    expect(outcome.text?.trim()).toMatch(new RegExp(`^✓ Allowed once by @?${MAIL.carol.replace(".", "\\.")}\\.$`));
    const channelId = (await message(ask)).channelId;
    expect(readFileSync(join(s.loaded.paths.workspaceDir, "channels", EMAIL_ADAPTER, channelId, "scratch", "memo.txt"), "utf8")).toBe("signed\n");
    const decisions = (await controlMessagesOf(s.bus, { adapter: EMAIL_ADAPTER, channelId })).filter((c) => c.type === "approval_decision");
    expect(decisions.map((d) => d.type === "approval_decision" && [d.decidedBy.id, d.decision])).toEqual([
      [MAIL.bob, "allow-once"],
      [MAIL.carol, "allow-once"],
    ]);
  });

  it("after a restart, a code in a reply to another mail of the thread (not the prompt) still decides the thread's waiting approval", async () => {
    s.llm.enqueue(
      { toolCalls: [{ name: "write", arguments: { label: "Note", path: "scratch/later.txt", content: "draft\n" } }] },
      { toolCalls: [{ name: "edit", arguments: { label: "Finish", path: "scratch/later.txt", oldText: "draft", newText: "done" } }] },
      { text: "The note is written." },
    );
    const ask = await s.mail.send({ from: MAIL.ana, to: MAIL.mom, subject: "Note", text: "write the note" });
    const prompt = await answer(MAIL.carol, ask, (m) => /Approval needed/.test(m.text ?? ""));
    const code = /"approve (\d{8})"/.exec(prompt.text ?? "")![1]!;
    await s.stopIngress();
    await s.startIngress();
    // Carol answers Ana's first mail, which she was copied on, not the prompt.
    const reply = await s.mail.send({ from: MAIL.carol, to: MAIL.mom, subject: "Re: Note", inReplyTo: ask, references: [ask], text: `approve ${code}` });
    await answer(MAIL.ana, ask, (m) => /^The note is written\./.test(m.text ?? ""), 30_000);
    const outcome = await answer(MAIL.carol, reply, (m) => /Allowed once/.test(m.text ?? ""));
    expect(outcome.text?.trim()).toMatch(new RegExp(`^✓ Allowed once by @?${MAIL.carol.replace(".", "\\.")}\\.$`));
  });

  it("a sender not on allowFrom is ignored and logged (and the mail marked seen)", async () => {
    const asked = s.llm.requests.length;
    const id = await s.mail.send({ from: MAIL.eve, to: MAIL.mom, subject: "hi", text: "answer me" });
    await logged(/sender not on allowFrom: ignored/, id);
    await seen(id);
    expect((await inbound()).find((m) => m.id === bare(id))).toBeUndefined();
    expect(await s.received(MAIL.eve)).toEqual([]);
    expect(s.llm.requests.length).toBe(asked);
  });

  it("the DM policy applies with the sender's address: an allowed sender outside `dm` gets the one-line refusal, and nothing reaches mom", async () => {
    const asked = s.llm.requests.length;
    const id = await s.mail.send({ from: MAIL.dan, to: MAIL.mom, subject: "hello", text: "may I?" });
    const refusal = await answer(MAIL.dan, id);
    expect(refusal.text).toMatch(new RegExp(`^${DM_REFUSAL.replace(/[.?]/g, "\\$&")}`));
    expect(refusal.subject).toBe("Re: hello");
    await seen(id);
    expect((await inbound()).find((m) => m.id === bare(id))).toBeUndefined();
    expect(s.llm.requests.length).toBe(asked);
  });

  it("bounces and automatic replies are never answered; a bounce of an answer records its delivery as failed", async () => {
    s.llm.enqueue({ text: "Hello ghost." });
    const toGhost = await s.mail.send({ from: MAIL.ghost, to: MAIL.mom, subject: "boo", text: "hello?" });
    const channelId = (await message(toGhost)).channelId;
    // The answer goes to gone.test, which postfix accepts and cannot deliver: a real bounce comes back to mom.
    const bounceLog = await eventually(() => s.logs.find((l) => /^bounce not answered/.test(l.msg)), "the bounce", 30_000);
    expect(bounceLog.msg).toMatch(/550 5\.1\.1 <ghost@gone\.test> User doesn't exist/);
    expect(bounceLog.recorded).toBe(true);
    const failed = await eventually(async () => (await receiptsOf(s.bus, { adapter: EMAIL_ADAPTER, channelId })).find((r) => r.type === "delivery.failed"), "delivery.failed");
    expect(failed).toMatchObject({ type: "delivery.failed" });

    const asked = s.llm.requests.length;
    const vacation = await s.mail.send({ from: MAIL.ana, to: MAIL.mom, subject: "Out of office", text: "I am away", headers: { "Auto-Submitted": "auto-replied" } });
    const list = await s.mail.send({ from: MAIL.bob, to: MAIL.mom, subject: "Newsletter", text: "news", headers: { "List-Id": "<news.example.test>", Precedence: "bulk" } });
    await logged(/automatic mail not answered \(Auto-Submitted: auto-replied\)/, vacation);
    await logged(/automatic mail not answered \(List-Id header\)/, list);
    await seen(list);
    await sleep(300);
    expect(s.llm.requests.length).toBe(asked);
    const ids = (await inbound()).map((m) => m.id);
    expect(ids).not.toContain(bare(vacation));
    expect(ids).not.toContain(bare(list));
  });

  it("a mail that came while the ingress was stopped is handled when it starts, once", async () => {
    await s.stopIngress();
    s.llm.enqueue({ text: "Back again." });
    const id = await s.mail.send({ from: MAIL.ana, to: MAIL.mom, subject: "While you were out", text: "are you there?" });
    await eventually(async () => (await s.mail.messages(MAIL.mom)).find((m) => m.messageId === id), "the delivery to mom's mailbox");
    await s.startIngress();
    await answer(MAIL.ana, id);
    await seen(id);
    await s.stopIngress();
    await s.startIngress();
    await sleep(1000);
    expect((await s.received(MAIL.ana)).filter((m) => m.inReplyTo === id)).toHaveLength(1);
    expect((await inbound()).filter((m) => m.id === bare(id))).toHaveLength(1);
  });

  it("an answer that ends while the ingress is restarted still goes out in the thread (the mail is found in the folder)", async () => {
    s.llm.enqueue({ text: "Finished while you restarted.", delayMs: 1500 });
    const asked = s.llm.requests.length;
    const id = await s.mail.send({ from: MAIL.ana, to: MAIL.mom, cc: MAIL.bob, subject: "Long job", text: "take your time" });
    await s.llm.waitForRequests(asked + 1);
    await s.stopIngress();
    await sleep(2000);
    await s.startIngress();
    const reply = await answer(MAIL.ana, id);
    expect(reply.text).toMatch(/^Finished while you restarted\./);
    expect(reply.subject).toBe("Re: Long job");
    expect(reply.cc).toMatchObject({ value: [{ address: MAIL.bob }] });
  });

  it("killed (kill -9) in the middle of a run whose answer names no mail (a scheduled event in a thread): after the restart the answer goes out as a reply to the thread's last mail", async () => {
    s.llm.enqueue({ text: "Noted." });
    const id = await s.mail.send({ from: MAIL.ana, to: MAIL.mom, cc: MAIL.bob, subject: "Reminders", text: "remind me about the release" });
    await answer(MAIL.ana, id);
    const channel = (await message(id)).channelId;
    // The ingress as its own process, so that it can be killed; ready once /readyz says so.
    await s.stopIngress();
    const port = await freePort();
    const child = spawn(process.execPath, [join(root, "services/ingress-email/dist/main.js"), "--adapter", EMAIL_ADAPTER, "--data-dir", s.dataDir], {
      env: { ...process.env, MOM_TEST_EMAIL_PASSWORD: "mom-test-secret", NATS_URL: s.nats.url, MOM_HTTP_PORT: String(port) },
      stdio: ["ignore", "ignore", "ignore"],
    });
    const exited = new Promise((r) => child.once("exit", r));
    const scheduler = await startScheduler({ loaded: s.loaded, logger: createLogger("e2e-scheduler", { level: "error" }), settleMs: 100 }, busOptions(s.loaded, s.nats.url, "scheduler", createLogger("e2e-scheduler", { level: "error" })));
    try {
      await eventually(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200, "the ingress process ready", 30_000);
      // The event is mom's own message in the thread: its run answers no mail (its run_ended names none).
      s.llm.enqueue({ text: "Reminder: the release is today.", delayMs: 2000 });
      const asked = s.llm.requests.length;
      writeFileSync(join(s.loaded.paths.workspaceDir, "events", "release.json"), JSON.stringify({ type: "immediate", channelId: `${EMAIL_ADAPTER}/${channel}`, text: "Remind ana about the release" }));
      await s.llm.waitForRequests(asked + 1, 15_000);
      const started = (await outboundEvents(s.bus, { adapter: EMAIL_ADAPTER, channelId: channel })).findLast((e) => e.event.type === "run_started");
      expect(started?.event).toMatchObject({ trigger: { senderId: "scheduler" } });
      expect(started?.event).not.toHaveProperty("replyTo");
      child.kill("SIGKILL");
      await exited;
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await scheduler.close();
    }
    const logged = s.logs.length;
    await s.startIngress();
    const reply = await answer(MAIL.ana, id, (m) => /^Reminder: the release is today\./.test(m.text ?? ""), 30_000);
    expect(reply.subject).toBe("Re: Reminders");
    expect(reply.references).toEqual(id);
    expect(reply.cc).toMatchObject({ value: [{ address: MAIL.bob }] });
    expect(s.logs.slice(logged).filter((l) => /rendering failed/.test(l.msg))).toEqual([]);
  }, 60_000);

  it("an IMAP outage is reported by problem() and survived: mom connects again and reads what came meanwhile", async () => {
    const platform = s.ingress!.shell.platform;
    expect(platform.problem?.()).toBeUndefined();
    await s.mail.stopImap();
    await eventually(() => platform.problem?.()?.startsWith("IMAP connection failing since"), "the reported outage");
    s.llm.enqueue({ text: "Through the outage." });
    const id = await s.mail.send({ from: MAIL.ana, to: MAIL.mom, subject: "outage", text: "still there?" });
    await sleep(500);
    await s.mail.startImap();
    // Back within the reconnect backoff (0.5 s doubling), and postfix's retry of the deferred delivery.
    await answer(MAIL.ana, id, () => true, 40_000);
    expect(platform.problem?.()).toBeUndefined();
  }, 60_000);

  it("a mail is marked seen only once handled: one whose handling failed is read again (at-least-once across crashes), before the mails after it", async () => {
    const handled: string[] = [];
    let fail = true;
    const box = new ImapMailbox({
      imap: { host: s.mail.host, port: s.mail.imapPort, secure: false, auth: { user: MAIL.bob, pass: "pw" } },
      mailbox: "INBOX",
      log: createLogger("e2e-email-box", { level: "silent" }),
      retryMs: 300,
      async handle(source) {
        const subject = /^Subject: (.*)$/m.exec(source.toString())![1]!;
        if (!subject.startsWith("for bob")) return true; // mom's earlier mails to bob
        if (fail) throw ((fail = false), new Error("NATS away"));
        return handled.push(subject), true;
      },
    });
    const id = await s.mail.send({ from: MAIL.ana, to: MAIL.bob, subject: "for bob 1", text: "hello" });
    await eventually(async () => (await s.mail.messages(MAIL.bob)).find((m) => m.messageId === id), "the delivery to bob");
    const next = await s.mail.send({ from: MAIL.ana, to: MAIL.bob, subject: "for bob 2", text: "and then" });
    await eventually(async () => (await s.mail.messages(MAIL.bob)).find((m) => m.messageId === next), "the second delivery to bob");
    await box.open();
    await box.start();
    try {
      await eventually(() => handled.length > 1, "the second attempt");
      expect(handled).toEqual(["for bob 1", "for bob 2"]);
      await eventually(async () => (await s.mail.messages(MAIL.bob)).find((m) => m.messageId === id)?.seen, "bob's mail marked \\Seen");
    } finally {
      await box.stop();
    }
  });

  it("runs as a service of its own (main.ts: runIngress), answers, and stops cleanly on SIGTERM", async () => {
    await s.stopIngress();
    const child = spawn(process.execPath, [join(root, "services/ingress-email/dist/main.js"), "--adapter", EMAIL_ADAPTER, "--data-dir", s.dataDir], {
      env: { ...process.env, MOM_TEST_EMAIL_PASSWORD: "mom-test-secret", NATS_URL: s.nats.url },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d));
    child.stderr.on("data", (d: Buffer) => (out += d));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      s.llm.enqueue({ text: "From the service." });
      const id = await s.mail.send({ from: MAIL.ana, to: MAIL.mom, subject: "service", text: "are you a process?" });
      const reply = await eventually(async () => (await s.received(MAIL.ana)).find((m) => m.inReplyTo === id), `the service's answer (its output: ${out})`, 30_000);
      expect(reply.text).toMatch(/^From the service\./);
    } finally {
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      await s.startIngress();
    }
  });

  it("bad settings stop the service naming config.json, the field and what was expected", () => {
    const file = join(s.dataDir, "config.json");
    const config = JSON.parse(readFileSync(file, "utf8"));
    const bad = { ...config, adapters: { [EMAIL_ADAPTER]: { type: "external", platform: "email", settings: { address: "mom", password: "x", imapHost: "h", smtpHost: "h", allowFrom: ["anyone"] } } } };
    writeFileSync(file, JSON.stringify(bad));
    try {
      expect(() => adapterSettings(emailIngress, loadConfig(s.dataDir, {}), EMAIL_ADAPTER)).toThrow(
        /config\.json: \/adapters\/email\/settings\/address: expected mom's e-mail address \(name@domain\), got "mom".*\/adapters\/email\/settings\/allowFrom\/0: expected an address \("ana@example\.org"\) or a domain \("@example\.org"\), got "anyone"/s,
      );
    } finally {
      writeFileSync(file, JSON.stringify(config));
    }
  });

  it("a wrong password stops the service at start with a message that names the adapter and what failed", async () => {
    const logger = createLogger("e2e-email-bad", { level: "silent" });
    const loaded = loadConfig(s.dataDir, {});
    process.env.MOM_TEST_EMAIL_PASSWORD = "wrong";
    try {
      await expect(startConfiguredIngress(emailIngress, loaded, EMAIL_ADAPTER, logger, s.nats.url)).rejects.toThrow(/email adapter "email": SMTP 127\.0\.0\.1:\d+: Invalid login: 535/);
    } finally {
      delete process.env.MOM_TEST_EMAIL_PASSWORD;
    }
  });
});
