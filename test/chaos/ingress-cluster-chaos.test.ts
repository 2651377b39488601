// What a person sees while the production NATS cluster (3 nodes, every stream and bucket at R3)
// loses nodes: a real Telegram ingress process (`mom ingress`, unmodified grammY polling the fake
// Bot API) between the people and three `mom runner` processes. cluster-chaos.test.ts proves the
// runners answer each mention once on the bus; this proves the platform shows each answer once:
// the ingress's durable consumer of mom.out is redelivered after failovers and after its own
// crash, and its presenter posts a progress message and then edits it into the answer, so a
// redelivered or replayed event must never post an answer a second time, and a message it
// publishes during a failover must be neither lost nor doubled.
//
// Faults, one after another while people mention mom in several chats: kill -9 of the node leading
// the outbound stream, kill -9 of the node leading the inbound stream, SIGSTOP of a node for 15 s
// (the ingress's own node when there is one to choose), and kill -9 of the ingress, restarted.
// Asserted on the fake Bot API: every mention has exactly one bot message that ever carried its
// answer, it ends reading that answer, it replies to the mention, answers come in mention order in
// each chat, no progress message is left reading "Working…"; and each channel's log.jsonl has each
// inbound message once. The one exception is what the ingress's own kill -9 does to a run going at
// that moment, a known limit (docs/scaling.md): the restarted process cannot know the platform ids
// of the dead one's messages, so it posts such a run's answer anew (the progress message stays, or,
// when the dead process had drawn the answer but not yet acked it, the answer shows twice). Those
// are allowed only for mentions of the 20 s before the kill, and printed.
//
// This test found answers shown out of order and half a minute late after a node froze or died:
// a pull the server kept for the ingress's old connection swallowed events, which came back only
// after the consumer's 30 s ack wait while newer ones were drawn (fixed in libs/bus,
// `keepOrderThroughLostPulls`, used by the ingress SDK's outbound consumer).
//
// MOM_CLUSTER_LOGS=<dir> keeps the runners', the ingress's and the servers' logs there (in
// <dir>/ingress-chaos), with what each chat shows at the end (platform.json).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { escapeChannelToken } from "@mom/contracts";
import { type FakeTelegram, startFakeTelegram, type StoredTgMessage, type TgChat, type TgUser } from "@mom/testing";
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { momBin } from "../support/ingress-process.js";
import { OutputCapture } from "../support/output-capture.js";
import { answer, answering, question, RunnerCluster } from "../support/runner-cluster.js";
import { sleep, until } from "../support/wait.js";

const ADAPTER = "tg";
const CHATS = 8;
const MENTION_EVERY_MS = 250; // 4 a second, round-robin: each chat every 2 s
const MIN_ROUNDS = 6;
const MAX_ROUNDS = 40; // a guard: rounds go on until the faults are done
const FREEZE_MS = 15_000;
/** After the last mention: answers drawn late (a consumer redelivering after its 30 s ack wait) still count. */
const SETTLE_MS = 60_000;

const chats: TgChat[] = Array.from({ length: CHATS }, (_, i) => ({ id: -1_000_100 - i, type: "supergroup", title: `team ${i}` }));
const people: TgUser[] = [
  { id: 2001, is_bot: false, first_name: "Ana", username: "ana" },
  { id: 2002, is_bot: false, first_name: "Bob", username: "bob" },
];
const WORKING = /^⏳ Working…/;

/** The Telegram ingress as deployed: `mom ingress tg <dataDir>`, its own process, killed and started again. */
class IngressProc {
  child?: ChildProcess;
  out = new OutputCapture();
  starts = 0;
  constructor(
    private readonly dataDir: string,
    private readonly env: NodeJS.ProcessEnv,
    private readonly logFile?: string,
  ) {}

  async start(): Promise<void> {
    this.out = new OutputCapture();
    const n = ++this.starts;
    const child = spawn(process.execPath, [momBin, "ingress", ADAPTER, this.dataDir], { env: { ...process.env, ...this.env }, stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    for (const s of [child.stdout!, child.stderr!]) {
      s.setEncoding("utf8").on("data", this.out.write);
      if (this.logFile) s.on("data", (chunk: string) => appendFileSync(this.logFile!, chunk));
    }
    if (this.logFile) appendFileSync(this.logFile, `--- ingress start ${n} at ${new Date().toISOString()}\n`);
    const died = new Promise<never>((_, reject) => child.once("exit", (code, sig) => reject(new Error(`the ingress exited (${code ?? sig}) before it was ready:\n${this.out.text.slice(-4000)}`))));
    died.catch(() => {});
    await Promise.race([this.out.waitFor("telegram ingress receiving", 60_000), died]);
  }

  alive(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  async kill9(): Promise<void> {
    const c = this.child;
    if (!c || !this.alive()) return;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill("SIGKILL");
    await exited;
  }
}

interface Mention {
  chat: number;
  n: number;
  messageId: number;
  at: number;
}

describe("a Telegram ingress process on a 3-node JetStream cluster under node faults and its own crash", () => {
  let c: RunnerCluster;
  let telegram: FakeTelegram;
  let ingress: IngressProc;

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    // The runners read config.json's adapters too: the token's variable must be set for them.
    process.env.MOM_TEST_TG_TOKEN = telegram.token;
    c = await RunnerCluster.start(
      { leaseSeconds: 20, shutdownGraceSeconds: 5 },
      {
        cluster: 3,
        logsSubdir: "ingress-chaos",
        adapters: { [ADAPTER]: { type: "telegram", botToken: "env:MOM_TEST_TG_TOKEN", apiUrl: telegram.url, dm: "everyone" } },
      },
    );
    c.llm.setFallback(answering(200, 500));
    await Promise.all([c.addRunner(), c.addRunner(), c.addRunner()]);
    ingress = new IngressProc(c.dataDir, { MOM_TEST_TG_TOKEN: telegram.token, NATS_URL: "" }, c.logsDir && join(c.logsDir, "ingress.log"));
    await ingress.start();
  }, 120_000);

  afterAll(async () => {
    await ingress?.kill9();
    await c?.stop();
    await telegram?.close();
    delete process.env.MOM_TEST_TG_TOKEN;
  });

  it("shows every mention's answer once, in order, in its chat; logs each message once", async () => {
    const cluster = c.cluster!;
    await until("every runner's heartbeat", async () => (await c.loads()).size === 3, 30_000);
    await sleep(2000);
    const outStream = c.bus.subjects.stream("OUT");
    const inStream = c.bus.subjects.stream("IN");
    const mentions: Mention[] = [];
    const faults: { name: string; at: number; note: string }[] = [];
    const notes: string[] = [];
    let faultsDone = false;
    let rounds = 0;
    const started = Date.now();

    // People mention mom through the platform: updates the ingress polls.
    const mentioning = (async () => {
      const start = Date.now();
      let k = 0;
      for (let n = 1; n <= MAX_ROUNDS && (n <= MIN_ROUNDS || !faultsDone); n++) {
        for (let i = 0; i < CHATS; i++, k++) {
          const wait = start + k * MENTION_EVERY_MS - Date.now();
          if (wait > 0) await sleep(wait);
          const chat = chats[i]!;
          const sent = telegram.say({ chat, from: people[k % people.length]!, ...telegram.mention(question(String(chat.id), n)) });
          mentions.push({ chat: chat.id, n, messageId: sent.message_id, at: Date.now() });
        }
        rounds = n;
      }
    })();

    const inject = (name: string, note: string) => {
      faults.push({ name, at: Date.now(), note });
    };
    const backInto = async (node: string, fault: string) => {
      try {
        await cluster.waitForHealth(30_000);
      } catch (err) {
        notes.push(`${fault}: ${(err as Error).message}; restarted ${node}`);
        await cluster.node(node).stop();
        await cluster.node(node).start();
        await cluster.waitForHealth(60_000);
      }
    };
    const leaderOf = (stream: string) => until(`a leader of ${stream}`, () => cluster.leaderOf(stream), 30_000);
    const ingressNode = async () => {
      for (const x of cluster.nodes) if ((await cluster.clientsOf(x.name)).some((n) => n.startsWith(`ingress-${ADAPTER}`))) return x.name;
      return undefined;
    };
    /** A run at the model: a fault must land on traffic. */
    const runInFlight = () =>
      until("a run in flight", async () => {
        for (const r of c.runners) if ((await c.runsInFlight(r.name, 0).catch(() => [])).length > 0) return true;
        return undefined;
      }, 30_000);
    const describeNode = async (node: string) => {
      const roles = [];
      if ((await cluster.leaderOf(outStream)) === node) roles.push(`${outStream} leader`);
      if ((await cluster.leaderOf(inStream)) === node) roles.push(`${inStream} leader`);
      if ((await cluster.metaLeader()) === node) roles.push("meta leader");
      if ((await ingressNode()) === node) roles.push("the ingress's node");
      return `${node} (${roles.join(", ") || "no role"})`;
    };

    await sleep(4000); // answers flowing in every chat

    // 1. kill -9 of the node leading the outbound stream (the ingress's consumer reads it), back after 5 s.
    await cluster.waitForHealth(60_000);
    let victim = await leaderOf(outStream);
    await runInFlight();
    inject(`kill -9 ${outStream} leader`, await describeNode(victim));
    await cluster.node(victim).kill9();
    await sleep(5000);
    await cluster.node(victim).start();
    await backInto(victim, "kill -9 OUT leader");
    await sleep(3000);

    // 2. kill -9 of the node leading the inbound stream (the ingress publishes to it), back after 5 s.
    await cluster.waitForHealth(60_000);
    victim = await leaderOf(inStream);
    await runInFlight();
    inject(`kill -9 ${inStream} leader`, await describeNode(victim));
    await cluster.node(victim).kill9();
    await sleep(5000);
    await cluster.node(victim).start();
    await backInto(victim, "kill -9 IN leader");
    await sleep(3000);

    // 3. SIGSTOP of the ingress's node (its socket stays open: it notices after two missed pings), 15 s.
    await cluster.waitForHealth(60_000);
    victim = (await ingressNode()) ?? (await leaderOf(outStream));
    await runInFlight();
    inject(`SIGSTOP ${FREEZE_MS / 1000} s`, await describeNode(victim));
    cluster.node(victim).pause();
    await sleep(FREEZE_MS);
    cluster.node(victim).resume();
    await backInto(victim, "SIGSTOP");
    await sleep(3000);

    // 4. kill -9 of the ingress mid-traffic, started again 3 s later: what it had drawn but not
    // acked is redelivered to the new process, and what was published meanwhile is drawn by it.
    await runInFlight();
    inject("kill -9 of the ingress", `pid ${ingress.child?.pid}`);
    const killedAt = Date.now();
    await ingress.kill9();
    // What the killed process had put in each chat: a progress message of it that a later process
    // never learns the id of (below).
    const lastIdAtKill = new Map(chats.map((ch) => [ch.id, Math.max(0, ...telegram.botMessages(ch.id, { includeDeleted: true }).map((b) => b.message_id))]));
    await sleep(3000);
    await ingress.start();
    await sleep(4000);
    faultsDone = true;
    await mentioning;
    const mentionsEnd = Date.now();

    // What each chat shows: every mention answered, once.
    const expected = (chat: number, n: number) => answer(String(chat), n);
    const carries = (m: StoredTgMessage, text: string) => m.versions.some((v) => new RegExp(`(^|\\s)${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?!\\d)`).test(v));
    const missing = () => mentions.filter((m) => !telegram.botMessages(m.chat).some((b) => b.text?.startsWith(expected(m.chat, m.n))));
    const settleDeadline = Date.now() + SETTLE_MS;
    while (missing().length > 0 && Date.now() < settleDeadline) await sleep(250);
    await sleep(3000); // an answer drawn twice would show now
    const settledMs = Date.now() - mentionsEnd;

    const problems: string[] = [];
    const leftovers: string[] = [];
    // Runs the killed ingress had opened (posted "Working…" as a reply to the mention) whose end the
    // restarted one drew: it cannot know the progress message's id (a platform's, kept in the dead
    // process's memory), so it posts the answer as a new message, not as a reply, and the progress
    // message stays. A known limit (docs/scaling.md), counted and printed; anything else is a failure.
    const crashCasualties: string[] = [];
    const crashOrphans = new Set<string>();
    const orphanFor = (chat: number, mention: number) =>
      telegram.botMessages(chat).find((b) => b.message_id <= lastIdAtKill.get(chat)! && b.reply_to_message?.message_id === mention && WORKING.test(b.text ?? ""));
    const byChat = new Map<number, { mentions: number; answers: number; queued: number; working: number; other: number }>();
    for (const chat of chats) {
      const shown = telegram.botMessages(chat.id, { includeDeleted: true });
      const mine = mentions.filter((m) => m.chat === chat.id);
      const row = { mentions: mine.length, answers: 0, queued: 0, working: 0, other: 0 };
      byChat.set(chat.id, row);
      let lastAnswerId = 0;
      let lastN = 0;
      for (const m of mine) {
        const text = expected(chat.id, m.n);
        const carrying = shown.filter((b) => carries(b, text));
        const what = `chat ${chat.id} mention ${m.n} (message ${m.messageId}, sent ${m.at - started} ms in)`;
        const seen = carrying.map((b) => `#${b.message_id}${b.deleted ? " deleted" : ""} reply to ${b.reply_to_message?.message_id ?? "-"}: ${JSON.stringify(b.versions.map((v) => v.split("\n")[0]))}`).join("; ");
        // The other thing a crash can do: an answer the killed process had put on the platform but
        // not yet acked (the few milliseconds between the platform's reply and the ack reaching
        // NATS) is drawn again by the restarted one, which cannot know the message. Only a run that
        // was going when the ingress died, whose first copy is the killed process's reply to the
        // mention and whose second the restarted one's: anything else carrying an answer twice is
        // a failure.
        const [first, second] = carrying;
        const crashCopy =
          carrying.length === 2 &&
          m.at <= killedAt &&
          m.at > killedAt - 20_000 &&
          first!.message_id <= lastIdAtKill.get(chat.id)! &&
          first!.reply_to_message?.message_id === m.messageId &&
          second!.message_id > lastIdAtKill.get(chat.id)! &&
          second!.reply_to_message === undefined;
        if (crashCopy) crashCasualties.push(`${what}: answered by the killed ingress (#${first!.message_id}) and again by the restarted one (#${second!.message_id})`);
        if (carrying.length === 0) problems.push(`${what}: no answer on the platform`);
        else if (carrying.length > 1 && !crashCopy) problems.push(`${what}: ${carrying.length} messages carry its answer: ${seen}`);
        else {
          const b = carrying[0]!;
          if (b.deleted || !b.text?.startsWith(text)) problems.push(`${what}: its answer message does not end reading the answer: ${seen}`);
          const orphan = orphanFor(chat.id, m.messageId);
          if (orphan && m.at > killedAt - 20_000 && b.message_id > lastIdAtKill.get(chat.id)! && b.reply_to_message === undefined) {
            crashCasualties.push(`${what}: progress #${orphan.message_id} left reading "Working…", answer #${b.message_id} posted on its own`);
            crashOrphans.add(`${chat.id}:${orphan.message_id}`);
          }
          else if (b.reply_to_message?.message_id !== m.messageId) problems.push(`${what}: its answer does not reply to it: ${seen}`);
          if (b.message_id < lastAnswerId) problems.push(`${what}: answered (#${b.message_id}) above the answer to mention ${lastN} (#${lastAnswerId})`);
          lastAnswerId = b.message_id;
          lastN = m.n;
        }
      }
      for (const b of shown) {
        if (b.deleted) continue;
        const t = b.text ?? "";
        if (/^a -?\d+:\d+/.test(t)) row.answers++;
        else if (/^⏳ Queued/.test(t)) row.queued++;
        else if (WORKING.test(t)) {
          row.working++;
          if (!crashOrphans.has(`${chat.id}:${b.message_id}`)) leftovers.push(`chat ${chat.id} #${b.message_id} reply to ${b.reply_to_message?.message_id ?? "-"} still reads ${JSON.stringify(t.split("\n")[0])}`);
        } else {
          row.other++;
          problems.push(`chat ${chat.id} #${b.message_id}: a bot message that is none of answer, queued notice or progress: ${JSON.stringify(t.slice(0, 200))}`);
        }
      }
    }

    // Each channel's log: every inbound message once, every mention there.
    const logs: string[] = [];
    for (const chat of chats) {
      const file = join(c.dataDir, "workspace/channels", ADAPTER, escapeChannelToken(String(chat.id)), "log.jsonl");
      if (!existsSync(file)) {
        logs.push(`chat ${chat.id}: no log.jsonl`);
        continue;
      }
      const lines = readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { id: string; isBot?: boolean });
      const inbound = lines.filter((l) => !l.isBot).map((l) => l.id);
      const twice = [...new Set(inbound.filter((id, i) => inbound.indexOf(id) !== i))];
      if (twice.length) logs.push(`chat ${chat.id}: logged more than once: ${twice.join(", ")}`);
      const absent = mentions.filter((m) => m.chat === chat.id && !inbound.includes(String(m.messageId))).map((m) => `${m.n} (message ${m.messageId})`);
      if (absent.length) logs.push(`chat ${chat.id}: mentions not in log.jsonl: ${absent.join(", ")}`);
    }

    // The bus's view, to tell an ingress fault from a runner fault when something is off.
    const busAnswers = c.answers();
    const onBus = chats.map((ch) => {
      const got = (busAnswers.get(String(ch.id)) ?? []).map((a) => a.text);
      const want = mentions.filter((m) => m.chat === ch.id).map((m) => expected(ch.id, m.n));
      return got.length === want.length && got.every((t, i) => t === want[i]) ? undefined : `chat ${ch.id} on the bus: ${JSON.stringify(got)}`;
    }).filter(Boolean);

    const summary = [
      `ingress-cluster-chaos ${new Date().toISOString()}: ${rounds} rounds x ${CHATS} chats = ${mentions.length} mentions, one every ${MENTION_EVERY_MS} ms; all shown ${settledMs} ms after the last (test ${Math.round((Date.now() - started) / 1000)} s)`,
      ...faults.map((f) => `${Math.round((f.at - started) / 100) / 10} s: ${f.name}: ${f.note}`),
      ...[...byChat].map(([id, r]) => `chat ${id}: ${r.mentions} mentions, ${r.answers} answers, ${r.queued} queued notices, ${r.working} left "Working…", ${r.other} other`),
      `runs the ingress's crash cut off (progress left "Working…" and the answer posted on its own, or the answer drawn by both processes): ${crashCasualties.length}`,
      ...crashCasualties,
      ...notes,
    ].join("\n");
    console.log(summary);
    if (c.logsDir) {
      writeFileSync(join(c.logsDir, "platform.json"), JSON.stringify({ faults, mentions, chats: chats.map((ch) => ({ id: ch.id, messages: telegram.botMessages(ch.id, { includeDeleted: true }) })) }, null, 2));
    }

    expect({ problems, leftovers, logs, onBus }).toEqual({ problems: [], leftovers: [], logs: [], onBus: [] });
    expect(ingress.alive()).toBe(true);
  }, 240_000);
});
