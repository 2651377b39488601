// A real Telegram ingress process (`mom ingress tg`) in front of a RunnerCluster on a 3-node NATS
// cluster, people mentioning mom in several chats through the fake Bot API, and the checks of what
// those chats show in the end: what test/chaos/ingress-cluster-chaos.test.ts and
// test/chaos/quorum-loss.test.ts share.
import { namespacedName } from "@mom/bus";
import { escapeChannelToken } from "@mom/contracts";
import type { FakeTelegram, StoredTgMessage, TgChat, TgUser } from "@mom/testing";
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { momBin } from "./ingress-process.js";
import { OutputCapture } from "./output-capture.js";
import { answer, question, type RunnerCluster } from "./runner-cluster.js";
import { sleep } from "./wait.js";

export const ADAPTER = "tg";
export const WORKING = /^⏳ Working…/;
/** How a run cut off by its runner losing the channel ends (services/agent-runner channel-worker's INTERRUPTED). */
const INTERRUPTED = /^■ Stopped: interrupted: .*another runner resumes it/;

export const tgChats = (n: number, base = -1_000_100): TgChat[] => Array.from({ length: n }, (_, i) => ({ id: base - i, type: "supergroup", title: `team ${i}` }));
export const tgPeople: TgUser[] = [
  { id: 2001, is_bot: false, first_name: "Ana", username: "ana" },
  { id: 2002, is_bot: false, first_name: "Bob", username: "bob" },
];

/** The config.json `adapters` entry of the Telegram bot (its token's variable must be set for the runners too). */
export const tgAdapter = (telegram: FakeTelegram) => ({ [ADAPTER]: { type: "telegram", botToken: "env:MOM_TEST_TG_TOKEN", apiUrl: telegram.url, dm: "everyone" } });

/** The Telegram ingress as deployed: `mom ingress tg <dataDir>`, its own process, killed and started again. */
export class IngressProc {
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

export interface Mention {
  chat: number;
  n: number;
  messageId: number;
  /** The update that carried it. */
  updateId: number;
  at: number;
}

/**
 * People mention mom through the platform, round-robin over `chats`, one every `everyMs`: rounds
 * 1..minRounds, then on while `more()` (at most maxRounds). Pushes onto `mentions` as it goes.
 */
export async function mentionRoundRobin(
  telegram: FakeTelegram,
  chats: TgChat[],
  mentions: Mention[],
  o: { everyMs: number; minRounds: number; maxRounds: number; more: () => boolean; onRound?: (n: number) => void },
): Promise<void> {
  const start = Date.now();
  let k = 0;
  for (let n = 1; n <= o.maxRounds && (n <= o.minRounds || o.more()); n++) {
    for (let i = 0; i < chats.length; i++, k++) {
      const wait = start + k * o.everyMs - Date.now();
      if (wait > 0) await sleep(wait);
      const chat = chats[i]!;
      const sent = telegram.say({ chat, from: tgPeople[k % tgPeople.length]!, ...telegram.mention(question(String(chat.id), n)) });
      mentions.push({ chat: chat.id, n, messageId: sent.message_id, updateId: telegram.lastUpdateId, at: Date.now() });
    }
    o.onRound?.(n);
  }
}

const expected = (chat: number, n: number) => answer(String(chat), n);

/** Waits (up to `settleMs`) until every mention's answer shows in its chat, then 3 s more (an answer drawn twice would show then). */
export async function settleAnswers(telegram: FakeTelegram, mentions: Mention[], settleMs: number): Promise<void> {
  const missing = () => mentions.filter((m) => !telegram.botMessages(m.chat).some((b) => b.text?.startsWith(expected(m.chat, m.n))));
  const deadline = Date.now() + settleMs;
  while (missing().length > 0 && Date.now() < deadline) await sleep(250);
  await sleep(3000);
}

/** What a kill -9 of the ingress at `killedAt` may leave (docs/scaling.md, limits); `lastIdAtKill`: the newest bot message per chat then. */
export interface IngressCrash {
  killedAt: number;
  lastIdAtKill: Map<number, number>;
  /**
   * Every platform message id the ingress ever recorded in the DRAWN bucket (a run's progress
   * message, an answer) while `watchDrawn` watched it. When given, the crash's traces are allowed
   * only for a message the killed process never recorded: it died between the platform's reply
   * and its record landing, so no process after it could know the message. A recorded one left
   * "Working…" or carrying an answer twice is a failure.
   */
  recorded?: Set<string>;
}

/**
 * Watches the adapter's records in the DRAWN bucket (docs/scaling.md, "An ingress killed mid-run")
 * and collects every platform message id any of them ever named: a later write of a run replaces
 * its record, so the bucket's state at the end would not say what a killed process had recorded.
 */
export async function watchDrawn(c: RunnerCluster): Promise<{ ids: Set<string>; records: () => number; stop(): void }> {
  const kv = await c.bus.existingKeyValue(namespacedName(c.bus, "DRAWN"));
  if (!kv) throw new Error("the ingress made no DRAWN bucket");
  const ids = new Set<string>();
  let records = 0;
  const iter = await kv.watch({ key: `${ADAPTER}.>` });
  void (async () => {
    for await (const e of iter) {
      if (e.operation !== "PUT" || e.length === 0) continue;
      records++;
      const r = e.json<{ progress?: { progressId?: string; main?: { id?: string } }; answered?: string[]; answering?: string[]; queued?: { id?: string }; prompts?: Record<string, unknown> }>();
      const named = [r.progress?.progressId, r.progress?.main?.id, r.queued?.id, ...(r.answered ?? []), ...(r.answering ?? []), ...Object.values(r.prompts ?? {})];
      for (const id of named) if (typeof id === "string") ids.add(id);
    }
  })().catch(() => {});
  return { ids, records: () => records, stop: () => iter.stop() };
}

export interface PlatformVerdict {
  problems: string[];
  leftovers: string[];
  logs: string[];
  onBus: string[];
  /** Per chat, printable. */
  rows: string[];
  /** What the ingress's own crash did (allowed, printed). */
  crashCasualties: string[];
  /** Runs cut off and resumed (with `allowResumed`), printed. */
  resumed: string[];
}

/**
 * The checks on what people see, per mention: exactly one bot message ever carried its answer (in
 * any of its versions), it ends reading the answer and replies to the mention, answers follow
 * mention order in each chat, no message is left "Working…", and no bot message is anything else;
 * each channel's log.jsonl has every inbound message once and every mention; the bus carried each
 * chat's answers in order. `crash`: the ingress was killed -9 then, and its known traces are
 * allowed for mentions of the 20 s before it (counted in crashCasualties) — with `crash.recorded`,
 * only for a message the killed process never recorded in the DRAWN bucket.
 */
export function checkPlatform(
  telegram: FakeTelegram,
  c: RunnerCluster,
  chats: TgChat[],
  mentions: Mention[],
  started: number,
  o: {
    crash?: IngressCrash;
    /**
     * Runners lost the bus for over 3/4 of a lease and set their channels down: a run cut off then
     * ends reading "■ Stopped: interrupted … another runner resumes it" and the mention is run again
     * (docs/scaling.md, the run in the record). Allowed when it replies to a mention whose answer
     * shows in a later message, or to nothing (the run's start was never drawn); counted in `resumed`,
     * as is a mention queued again (a second "queued" notice) by the runner that took its channel
     * when the ingress was restarted in between (`crash`).
     */
    allowResumed?: boolean;
  } = {},
): PlatformVerdict {
  const { crash } = o;
  const carries = (m: StoredTgMessage, text: string) => m.versions.some((v) => new RegExp(`(^|\\s)${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?!\\d)`).test(v));
  const problems: string[] = [];
  const leftovers: string[] = [];
  // Runs the killed ingress had opened (posted "Working…" as a reply to the mention) whose end the
  // restarted one drew without knowing the progress message's id: it posts the answer as a new
  // message, and the progress message stays. The id is in the DRAWN bucket once its record landed
  // (docs/scaling.md), and the restarted ingress then edits that message into the answer.
  //   With `crash.recorded` (the bucket watched from before the kill): a mention's traces of the
  // crash are allowed only when the killed process had shown its run in messages it never recorded
  // — it died between the platform's reply and the record landing (or with the bucket unwritable
  // all that while) — and then whatever the restarted process could not know follows: that
  // progress message left "Working…" and the answer posted anew (replying to the mention when its
  // start came again), or the answer the killed one had drawn drawn a second time, or a progress
  // message of the restarted one for a run whose end it never got (the killed one drew it, and
  // only the start's ack was lost).
  //   Without it (quorum-loss.test.ts, where the bucket cannot be written during the outage the
  // ingress dies in) the old allowance: any run of a mention of the 20 s before the kill.
  // Counted and printed; anything else is a failure.
  const crashCasualties: string[] = [];
  const crashOrphans = new Set<string>();
  const beforeKill = (chat: number, id: number) => !!crash && id <= crash.lastIdAtKill.get(chat)!;
  const nearKill = (m: Mention) => !!crash && m.at <= crash.killedAt && m.at > crash.killedAt - 20_000;
  const orphanFor = (chat: number, mention: number) =>
    telegram.botMessages(chat).find((b) => beforeKill(chat, b.message_id) && b.reply_to_message?.message_id === mention && WORKING.test(b.text ?? ""));
  /** The killed process's messages of a mention's run (not its queued notice), when it showed the run and recorded none of them. */
  const unrecordedRun = (chat: number, m: Mention): StoredTgMessage[] | undefined => {
    if (!crash?.recorded) return undefined;
    const its = telegram.botMessages(chat, { includeDeleted: true }).filter((b) => beforeKill(chat, b.message_id) && b.reply_to_message?.message_id === m.messageId && !/^⏳ Queued/.test(b.versions[0] ?? ""));
    return its.length > 0 && its.every((b) => !crash.recorded!.has(String(b.message_id))) ? its : undefined;
  };
  const rows: string[] = [];
  const resumed: string[] = [];
  // The cut-off run's progress message replies to its mention; the answer came in a later message replying to it too.
  const resumedLater = (chat: number, b: StoredTgMessage) => {
    const m = mentions.find((x) => x.chat === chat && x.messageId === b.reply_to_message?.message_id);
    return !!m && telegram.botMessages(chat).some((a) => a.message_id > b.message_id && a.reply_to_message?.message_id === m.messageId && a.text?.startsWith(expected(chat, m.n)));
  };
  for (const chat of chats) {
    const shown = telegram.botMessages(chat.id, { includeDeleted: true });
    const mine = mentions.filter((m) => m.chat === chat.id);
    const row = { answers: 0, queued: 0, working: 0, other: 0 };
    let lastAnswerId = 0;
    let lastN = 0;
    for (const m of mine) {
      const text = expected(chat.id, m.n);
      const carrying = shown.filter((b) => carries(b, text));
      const what = `chat ${chat.id} mention ${m.n} (message ${m.messageId}, sent ${m.at - started} ms in)`;
      // One "queued" notice at most: a redelivered run_queued finds the killed process's in DRAWN.
      const notices = shown.filter((b) => !b.deleted && b.reply_to_message?.message_id === m.messageId && /^⏳ Queued/.test(b.versions[0] ?? ""));
      if (notices.length > 1) {
        const [once, again] = notices;
        const crashCopy =
          notices.length === 2 &&
          beforeKill(chat.id, once!.message_id) &&
          !beforeKill(chat.id, again!.message_id) &&
          (crash?.recorded ? !crash.recorded.has(String(once!.message_id)) : nearKill(m));
        if (crashCopy) crashCasualties.push(`${what}: queued notice #${once!.message_id}${crash?.recorded ? ", which the killed ingress never recorded," : ""} posted again by the restarted one (#${again!.message_id})`);
        // A channel set down is taken over by a runner that queues its waiting messages again, as runs
        // of its own: the ingress edits the notice it keeps for the message, unless it was restarted since.
        else if (o.allowResumed && crash) resumed.push(`${what}: queued again by the runner that took its channel over, after the ingress's restart (${notices.map((b) => `#${b.message_id}`).join(", ")})`);
        else problems.push(`${what}: ${notices.length} queued notices: ${notices.map((b) => `#${b.message_id}`).join(", ")}`);
      }
      const seen = carrying.map((b) => `#${b.message_id}${b.deleted ? " deleted" : ""} reply to ${b.reply_to_message?.message_id ?? "-"}: ${JSON.stringify(b.versions.map((v) => v.split("\n")[0]))}`).join("; ");
      // The other thing a crash can do: an answer the killed process had put on the platform but
      // not yet acked is drawn again by the restarted one, which posts it anew when it cannot know
      // the message. Only a run that was going when the ingress died, whose first copy is the
      // killed process's reply to the mention (never recorded, with `crash.recorded`: a recorded
      // one is edited, or found answered, by the restarted one) and whose second the restarted
      // one's: anything else carrying an answer twice is a failure.
      const [first, second] = carrying;
      const unknown = unrecordedRun(chat.id, m);
      const unknownIds = unknown?.map((b) => `#${b.message_id}`).join(", ");
      const crashCopy = crash?.recorded
        ? carrying.length === 2 && !!unknown && beforeKill(chat.id, first!.message_id) && !beforeKill(chat.id, second!.message_id)
        : carrying.length === 2 &&
          nearKill(m) &&
          beforeKill(chat.id, first!.message_id) &&
          first!.reply_to_message?.message_id === m.messageId &&
          !beforeKill(chat.id, second!.message_id) &&
          second!.reply_to_message === undefined;
      if (crashCopy) crashCasualties.push(`${what}: answered by the killed ingress (#${first!.message_id}${unknown ? `; it recorded none of ${unknownIds}` : ""}) and again by the restarted one (#${second!.message_id})`);
      if (carrying.length === 0) problems.push(`${what}: no answer on the platform`);
      else if (carrying.length > 1 && !crashCopy) problems.push(`${what}: ${carrying.length} messages carry its answer: ${seen}`);
      else {
        const b = carrying[0]!;
        if (b.deleted || !b.text?.startsWith(text)) problems.push(`${what}: its answer message does not end reading the answer: ${seen}`);
        const orphan = orphanFor(chat.id, m.messageId);
        // The restarted process's progress messages of this run left "Working…" (its end never came to it).
        const restartedOrphans = unknown ? telegram.botMessages(chat.id).filter((x) => !beforeKill(chat.id, x.message_id) && x.reply_to_message?.message_id === m.messageId && WORKING.test(x.text ?? "")) : [];
        for (const x of restartedOrphans) {
          crashCasualties.push(`${what}: the killed ingress recorded none of ${unknownIds}; the restarted one's progress #${x.message_id} left reading "Working…" (the run's end had gone to the killed one)`);
          crashOrphans.add(`${chat.id}:${x.message_id}`);
        }
        if (orphan && crash && (crash.recorded ? !!unknown : m.at > crash.killedAt - 20_000 && !beforeKill(chat.id, b.message_id) && b.reply_to_message === undefined)) {
          crashCasualties.push(`${what}: progress #${orphan.message_id}${unknown ? ", which the killed ingress never recorded," : ""} left reading "Working…", answer #${b.message_id} posted ${b.reply_to_message ? "anew" : "on its own"}`);
          crashOrphans.add(`${chat.id}:${orphan.message_id}`);
        } else if (b.reply_to_message?.message_id !== m.messageId) problems.push(`${what}: its answer does not reply to it: ${seen}`);
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
      } else if (o.allowResumed && INTERRUPTED.test(t) && (b.reply_to_message === undefined || resumedLater(chat.id, b))) {
        // Replying to nothing: the cut-off run's start never reached the ingress (no progress
        // message to turn into the notice), so the notice is posted on its own. Noise, not a loss.
        resumed.push(`chat ${chat.id} #${b.message_id} ${b.reply_to_message ? `reply to ${b.reply_to_message.message_id}, answered later` : "on its own (its run's start was never drawn)"}: ${JSON.stringify(t.split("\n")[0])}`);
      } else {
        row.other++;
        problems.push(`chat ${chat.id} #${b.message_id}: a bot message that is none of answer, queued notice or progress: ${JSON.stringify(t.slice(0, 200))}`);
      }
    }
    rows.push(`chat ${chat.id}: ${mine.length} mentions, ${row.answers} answers, ${row.queued} queued notices, ${row.working} left "Working…", ${row.other} other`);
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
  const onBus = chats
    .map((ch) => {
      const got = (busAnswers.get(String(ch.id)) ?? []).map((a) => a.text);
      const want = mentions.filter((m) => m.chat === ch.id).map((m) => expected(ch.id, m.n));
      return got.length === want.length && got.every((t, i) => t === want[i]) ? undefined : `chat ${ch.id} on the bus: ${JSON.stringify(got)}`;
    })
    .filter((x): x is string => !!x);

  return { problems, leftovers, logs, onBus, rows, crashCasualties, resumed };
}
