import { DM_REFUSAL } from "@mom/render";
import { isStopCommand } from "@mom/contracts";
import { randomUUID } from "node:crypto";
import type { IngressUnderTest, PlatformDriver } from "./platform-driver.js";
import { eventually, ScriptedMom } from "./scripted-mom.js";

export interface ConformanceTarget {
  /** The adapter's name in config.json (admins: [driver.users.admin], dm: [driver.users.member]). */
  adapter: string;
  natsUrl: string;
  namespace?: string;
  ingress: IngressUnderTest;
  platform: PlatformDriver;
  /** Messages sent at once in the ordering check (default 25). */
  burst?: number;
}

export interface ConformanceCase {
  name: string;
  /** Why the case does not apply to this platform, when it does not. */
  skip?: string;
  /** How long the case may take (default 60 s). */
  timeoutMs?: number;
  run(): Promise<void>;
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`conformance: ${what}`);
}

/**
 * The standard suite every ingress passes, as a list of cases for any test runner (jest, vitest,
 * node:test): `describeConformance` wires them to one. The ingress is started before the first case
 * and stopped after the last; the cases share it and each uses its own markers, so they are
 * independent of each other's leftovers.
 */
export function conformanceCases(t: ConformanceTarget): { setup(): Promise<void>; teardown(): Promise<void>; cases: ConformanceCase[] } {
  const p = t.platform;
  let mom!: ScriptedMom;
  const mark = () => `m${randomUUID().slice(0, 8)}`;
  const shown = (channel: string, text: string, what: string, timeoutMs?: number) => eventually(async () => (await p.botTexts(channel)).some((s) => s.includes(text)), what, timeoutMs);
  /** What the chat shows once earlier runs are drawn to the end (nothing changed for 700 ms, at most 10 s): a late reply of theirs would shift what a case counts. */
  const settled = async (channel: string): Promise<string[]> => {
    let last = JSON.stringify(await p.botTexts(channel));
    for (const until = Date.now() + 10_000; Date.now() < until; ) {
      await new Promise((r) => setTimeout(r, 700));
      const now = JSON.stringify(await p.botTexts(channel));
      if (now === last) break;
      last = now;
    }
    return JSON.parse(last) as string[];
  };

  /** Sends, waits for the published message, runs it to an answer and waits for the answer on the platform. */
  const answer = async (channel: string, who: "admin" | "member", o: { mention?: boolean; timeoutMs?: number } = { mention: true }) => {
    const m = mark();
    await p.send(channel, who, `hello ${m}`, o);
    const msg = await mom.message(channel, m, o.timeoutMs);
    const run = await mom.startRun(channel, msg);
    await run.end(`answer ${m}`);
    await shown(channel, `answer ${m}`, `the answer to ${m} shown in ${channel}`, o.timeoutMs);
    return msg;
  };

  const cases: ConformanceCase[] = [
    {
      name: "a mention is published once, from its sender, and answered in place",
      async run() {
        const msg = await answer(p.room, "member");
        check(msg.isMention, "a mention is published with isMention");
        check(msg.sender.id === p.users.member && !msg.sender.isBot, `the sender is the member (${p.users.member}), got ${msg.sender.id}`);
        check(!Number.isNaN(Date.parse(msg.timestamp)), "the timestamp is ISO 8601");
      },
    },
    {
      name: "a message that does not address mom is published for context, not for an answer",
      ...(p.everyMessageAddressed && { skip: "every message on this platform addresses mom" }),
      async run() {
        const m = mark();
        await p.send(p.room, "member", `just chatting ${m}`, { mention: false });
        check(!(await mom.message(p.room, m)).isMention, "published with isMention false");
      },
    },
    {
      name: "direct messages follow the DM policy: an allowed person is answered, a stranger is told no and nothing is published",
      ...(!p.dmWith && { skip: "the platform has no direct conversations" }),
      async run() {
        const dm = p.dmWith!("member");
        const msg = await answer(dm, "member");
        check(msg.isDirect === true && msg.isMention, "a DM is published as direct and addressed");
        const stranger = p.dmWith!("stranger");
        const m = mark();
        await p.send(stranger, "stranger", `let me in ${m}`, { mention: true });
        await shown(stranger, DM_REFUSAL.slice(0, 30), "the DM refusal shown to the stranger");
        // The refusal is sent after the decision not to publish, so nothing can follow it.
        check(!(await mom.messages(stranger)).some((x) => x.text.includes(m)), "a refused DM is not published");
      },
    },
    {
      name: "a redelivered platform event is published once",
      ...(!p.redeliverLast && { skip: "the driver cannot redeliver" }),
      async run() {
        const m = mark();
        await p.send(p.room, "member", `once ${m}`, { mention: false });
        await mom.message(p.room, m);
        await p.redeliverLast!();
        const after = mark();
        await p.send(p.room, "member", `after ${after}`, { mention: false });
        await mom.message(p.room, after);
        const copies = (await mom.messages(p.room)).filter((x) => x.text.includes(m)).length;
        check(copies === 1, `one copy published, got ${copies}`);
      },
    },
    {
      name: "messages of one channel are published in the order they were sent, under a burst",
      async run() {
        const n = t.burst ?? 25;
        const m = mark();
        for (let i = 0; i < n; i++) await p.send(p.room, "member", `burst ${m} #${i}`, { mention: false });
        const got = await eventually(async () => {
          const all = (await mom.messages(p.room)).filter((x) => x.text.includes(`burst ${m} `));
          return all.length >= n ? all : undefined;
        }, `${n} burst messages published`);
        const order = got.map((x) => Number(/#(\d+)/.exec(x.text)![1]));
        check(order.length === n && order.every((v, i) => v === i), `published in order once each, got ${order.join(",")}`);
      },
    },
    {
      name: "a file sent to mom is in the files bucket, byte for byte",
      ...(!p.botFiles && { skip: "the platform cannot carry files" }),
      async run() {
        const m = mark();
        const bytes = new TextEncoder().encode(`file body ${m}\n`);
        await p.send(p.room, "member", `see file ${m}`, { mention: true, file: { filename: `${m}.txt`, bytes } });
        const msg = await mom.message(p.room, m);
        const a = msg.attachments.find((x) => x.filename.includes(m));
        check(!!a?.objectKey, `the attachment ${m}.txt is published with an object key (got ${JSON.stringify(msg.attachments)})`);
        const stored = await mom.bus.getFile(a!.objectKey!);
        check(!!stored && Buffer.from(stored).equals(Buffer.from(bytes)), "the stored bytes are the sent bytes");
      },
    },
    {
      name: "a file mom shares reaches the channel (or the answer says it could not)",
      async run() {
        const m = mark();
        await p.send(p.room, "member", `send me ${m}`, { mention: true });
        const run = await mom.startRun(p.room, await mom.message(p.room, m));
        const bytes = new TextEncoder().encode(`shared ${m}\n`);
        await run.emit(await mom.shareFile(p.room, `${m}.txt`, bytes));
        await run.end(`here it is ${m}`);
        await shown(p.room, `here it is ${m}`, "the answer with the file");
        if (p.botFiles) {
          const files = await eventually(async () => (await p.botFiles!(p.room)).find((f) => f.filename.includes(m)), `the file ${m}.txt on the platform`);
          check(Buffer.from(files.bytes).equals(Buffer.from(bytes)), "the platform got the shared bytes");
        } else {
          await eventually(async () => (await p.botTexts(p.room)).some((s) => s.includes(`${m}.txt`)), "the platform without files naming the file it could not send");
        }
      },
    },
    {
      name: "a post from another channel: the operator's is shown, recorded as delivered and published back as mom's; a stranger's is refused",
      async run() {
        const receipt = (postId: string) => eventually(async () => (await mom.receipts(p.room)).find((r) => r.runId === postId), `the delivery receipt of post ${postId}`);
        const m = mark();
        const op = await mom.post(p.room, `operator note ${m}`, { access: "operator", requestedBy: { adapter: "cli", id: "u-operator", username: "operator" } });
        await shown(p.room, `operator note ${m}`, "the operator's post shown in the room");
        const ok = await receipt(op);
        check(ok.type === "delivery.succeeded", `the post is recorded as delivered, got ${ok.type}: ${ok.detail}`);
        const record = await mom.message(p.room, `operator note ${m}`);
        check(record.id === `post:${op}` && record.sender.isBot && record.sender.id === "mom" && !record.isMention, `published back as mom's message post:${op}, not addressed to mom (got ${JSON.stringify({ id: record.id, sender: record.sender, isMention: record.isMention })})`);
        // Checked against the platform: the member (who writes in the room) may post there only where the platform can tell.
        await p.send(p.room, "member", `here ${m}`, { mention: false });
        await mom.message(p.room, `here ${m}`);
        const mine = await mom.post(p.room, `member note ${m}`, { access: "check", requestedBy: { id: p.users.member, username: "member" } });
        const theirs = await mom.post(p.room, `stranger note ${m}`, { access: "check", requestedBy: { id: p.users.stranger, username: "stranger" } });
        const [r1, r2] = [await receipt(mine), await receipt(theirs)];
        check(r2.type === "delivery.failed", `the stranger's post is refused, got ${r2.type}`);
        if (p.checksMembership) {
          check(r1.type === "delivery.succeeded", `the member's post is delivered, got ${r1.type}: ${r1.detail}`);
          await shown(p.room, `member note ${m}`, "the member's post shown");
        } else check(r1.type === "delivery.failed", `without a membership check the member's post is refused too, got ${r1.type}`);
        check(!(await p.botTexts(p.room)).some((t) => t.includes(`stranger note ${m}`)), "the stranger's post is not shown");
      },
    },
    {
      name: "stop is published as a stop command for mom",
      async run() {
        await p.send(p.room, "member", "stop", { mention: true });
        const msg = await eventually(async () => (await mom.messages(p.room)).find((x) => isStopCommand(x.text) && x.sender.id === p.users.member), "the stop published");
        check(msg.isMention, "stop is addressed to mom");
      },
    },
    {
      name: "approvals: allowed by an approver, denied by an approver, a stranger's click sent with who it was",
      async run() {
        const m = mark();
        await p.send(p.room, "member", `do it ${m}`, { mention: true });
        const run = await mom.startRun(p.room, await mom.message(p.room, m));
        const ask = async (decision: "allow-once" | "deny", who: "admin" | "stranger") => {
          const approvalId = randomUUID();
          const target = `/tmp/${m}-${decision}-${who}`;
          const expiresAt = new Date(Date.now() + 600_000).toISOString();
          await run.emit({ type: "approval_requested", approvalId, toolId: "bash", risk: "destructive", argsSummary: `rm -rf ${target}`, requestedBy: { id: p.users.member, username: "member" }, expiresAt, approvers: [p.users.admin] });
          await p.decide(p.room, { approvalId, argsSummary: `rm -rf ${target}` }, decision, who);
          const d = await eventually(async () => (await mom.decisions(p.room)).find((x) => x.approvalId === approvalId), `the ${decision} decision on the bus`);
          check(d.decision === decision, `decision ${decision}, got ${d.decision}`);
          check(d.decidedBy.id === p.users[who], `decided by ${who} (${p.users[who]}), got ${d.decidedBy.id}`);
          await run.emit({ type: "approval_resolved", approvalId, outcome: who === "stranger" ? "expired" : decision === "deny" ? "denied" : "approved", decidedBy: d.decidedBy.username });
        };
        await ask("allow-once", "admin");
        await ask("deny", "admin");
        await ask("allow-once", "stranger");
        await run.end(`done ${m}`);
        await shown(p.room, `done ${m}`, "the answer after the approvals");
      },
    },
    {
      name: "a prompt shown before the ingress restarts decides in its channel after it, and is closed with the outcome",
      ...(p.promptsLostOnRestart && { skip: p.promptsLostOnRestart }),
      timeoutMs: 120_000,
      async run() {
        const m = mark();
        await p.send(p.room, "member", `careful ${m}`, { mention: true });
        const run = await mom.startRun(p.room, await mom.message(p.room, m));
        const approvalId = randomUUID();
        const argsSummary = `rm -rf /tmp/${m}-across-a-restart`;
        const expiresAt = new Date(Date.now() + 600_000).toISOString();
        await run.emit({ type: "approval_requested", approvalId, toolId: "bash", risk: "destructive", argsSummary, requestedBy: { id: p.users.member, username: "member" }, expiresAt, approvers: [p.users.admin] });
        await shown(p.room, argsSummary, "the prompt, before the restart");
        await t.ingress.stop();
        await t.ingress.start();
        await p.decide(p.room, { approvalId, argsSummary }, "allow-once", "admin");
        const d = await eventually(async () => (await mom.decisions(p.room)).find((x) => x.approvalId === approvalId), "the decision, in the channel that asked");
        check(d.decision === "allow-once" && d.decidedBy.id === p.users.admin, `allowed by the admin, got ${d.decision} by ${d.decidedBy.id}`);
        // Named with the mark, so that this outcome is told apart from the earlier cases'.
        await run.emit({ type: "approval_resolved", approvalId, outcome: "approved", decidedBy: `${d.decidedBy.username}-${m}` });
        await shown(p.room, `Allowed once by ${d.decidedBy.username}-${m}`, "the prompt of before the restart closed with the outcome");
        await run.end(`done ${m}`);
        await shown(p.room, `done ${m}`, "the answer");
      },
    },
    {
      name: "a platform rate limit is waited out and the answer still arrives",
      ...(!p.rateLimitNext && { skip: "the driver cannot rate-limit" }),
      async run() {
        p.rateLimitNext!(2);
        // Clients wait out Retry-After and may add a backoff of their own on top.
        await answer(p.room, "member", { mention: true, timeoutMs: 45_000 });
      },
    },
    {
      name: "a dropped platform connection comes back by itself with nothing lost",
      ...(!p.dropConnection && { skip: "the driver cannot drop the connection" }),
      timeoutMs: 150_000,
      async run() {
        await p.dropConnection!();
        // A client backs off between its reconnects (grammY's auto-retry: seconds, doubling).
        await answer(p.room, "member", { mention: true, timeoutMs: 60_000 });
      },
    },
    {
      name: "a crash of the ingress mid-run loses nothing: the answer published while it was down is drawn after restart, into the progress message the killed process showed",
      ...(!t.ingress.kill && { skip: "the ingress runs in the test's process (no kill -9)" }),
      timeoutMs: 120_000,
      async run() {
        const m = mark();
        const before = (await settled(p.room)).length;
        await p.send(p.room, "member", `long job ${m}`, { mention: true });
        const run = await mom.startRun(p.room, await mom.message(p.room, m));
        // Where the platform shows a run's progress (a message later edited into the answer), it is
        // on screen before the kill, and a moment longer: the killed process has recorded it.
        const progress = await eventually(async () => ((await p.botTexts(p.room)).length > before ? before : undefined), "a progress message", 3000).catch(() => undefined);
        if (progress !== undefined) await new Promise((r) => setTimeout(r, 1000));
        await t.ingress.kill!();
        await run.end(`finished ${m}`);
        const later = mark();
        if (t.ingress.buffersWhileDown) await p.send(p.room, "member", `while down ${later}`, { mention: false });
        await t.ingress.start();
        // The events the killed process had taken come again once their ack wait ran out.
        await shown(p.room, `finished ${m}`, "the answer drawn after the restart", 60_000);
        if (progress !== undefined) {
          // The restarted process knew the killed one's progress message (MOM_DRAWN) and edited it: nothing is left "working", the answer shows once.
          const texts = await p.botTexts(p.room);
          check(texts[progress]?.includes(`finished ${m}`) === true, `the answer drawn into the progress message the killed process showed, not posted anew; mom's messages: ${JSON.stringify(texts.slice(progress))}`);
          check(texts.filter((x) => x.includes(`finished ${m}`)).length === 1, `the answer shown once; mom's messages: ${JSON.stringify(texts.slice(progress))}`);
        }
        if (t.ingress.buffersWhileDown) await mom.message(p.room, later);
      },
    },
  ];
  return {
    async setup() {
      mom = await ScriptedMom.connect({ natsUrl: t.natsUrl, adapter: t.adapter, ...(t.namespace && { namespace: t.namespace }) });
      await t.ingress.start();
    },
    async teardown() {
      await t.ingress.stop();
      await mom?.close();
    },
    cases,
  };
}

export interface TestRunner {
  describe(name: string, body: () => void): void;
  it(name: string, body: () => Promise<void>, timeoutMs?: number): void;
  beforeAll(body: () => Promise<void>, timeoutMs?: number): void;
  afterAll(body: () => Promise<void>, timeoutMs?: number): void;
}

/**
 * Registers the suite with a test runner (jest's, vitest's and node:test's describe/it/beforeAll/
 * afterAll are alike). `target` is read when the suite is declared, for which cases apply; what
 * exists only once servers run (`natsUrl`) may be a getter, and `prepare`/`dispose` start and stop
 * those servers around the suite.
 */
export function describeConformance(name: string, target: ConformanceTarget & { prepare?(): Promise<void>; dispose?(): Promise<void> }, r: TestRunner): void {
  r.describe(name, () => {
    const suite = conformanceCases(target);
    r.beforeAll(async () => {
      await target.prepare?.();
      await suite.setup();
    }, 120_000);
    r.afterAll(async () => {
      await suite.teardown();
      await target.dispose?.();
    }, 60_000);
    for (const c of suite.cases) {
      // A case that does not apply is not registered: `notApplicable` lists it with the reason.
      if (c.skip) continue;
      r.it(c.name, () => c.run(), c.timeoutMs ?? 60_000);
    }
  });
}

/** The cases that do not apply to `target`, with why (for the conformance table of a report). */
export function notApplicable(target: ConformanceTarget): { name: string; why: string }[] {
  return conformanceCases(target).cases.filter((c) => c.skip).map((c) => ({ name: c.name, why: c.skip! }));
}
