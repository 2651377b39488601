// The production NATS cluster (3 nodes, every stream and bucket at R3) losing QUORUM: two of the
// three nodes gone at once (a zone outage, a bad rolling deploy) for 25 s, then back. JetStream
// refuses every write meanwhile (a replicated write needs two of three) and consumers stall; core
// NATS still works on the survivor, so clients stay connected. People keep mentioning mom in
// several chats through the fake Bot API all along, read by a real Telegram ingress process
// (`mom ingress tg`, grammY long-polling getUpdates) in front of three `mom runner` processes.
//
// The promise: nothing people sent is lost and nothing is answered twice. The ingress holds what
// it cannot store: Telegram's getUpdates offset (which confirms, and so deletes, every earlier
// update) must not move past an update whose message is not stored yet, so a process that dies
// meanwhile leaves it with Telegram; the runners resume when the cluster is back; every mention is
// answered once, in order, and nothing stays "Working…" (the checks of ingress-cluster-chaos,
// shared in test/support/telegram-cluster.ts). And the outage is loud: the ingress and every
// runner log warnings while it lasts, and /readyz of each is polled throughout (printed).
//
// Variants: kill -9 of both nodes, with the ingress killed -9 too 15 s into the outage (a zone
// outage takes its pod as well) and started again once the cluster is back: what it held must
// still be with Telegram; and SIGSTOP of both nodes (their sockets stay open: clients notice only
// by missed pings) with the ingress alive throughout. Runs cut off when runners set their channels
// down (no heartbeat for 3/4 of a lease, by design) end reading "interrupted … another runner
// resumes it" and are answered by the next run: allowed, printed.
//
// This test found the ingress confirming to Telegram, during the outage, every update it could
// not store (grammY's offset moves on as soon as the handlers return, and the Telegram handler
// does not wait for the publish): with the ingress killed then, those messages were lost (fixed
// in services/ingress-telegram, `HeldUpdates`).
//
// MOM_CLUSTER_LOGS=<dir> keeps every process's log in <dir>/quorum-<variant>.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { freePort, type FakeTelegram, startFakeTelegram } from "@mom/testing";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { answering, RunnerCluster } from "../support/runner-cluster.js";
import { checkPlatform, type IngressCrash, IngressProc, type Mention, mentionRoundRobin, settleAnswers, tgAdapter, tgChats } from "../support/telegram-cluster.js";
import { sleep, until } from "../support/wait.js";

const CHATS = 6;
const MENTION_EVERY_MS = 300; // each chat every 1.8 s
const OUTAGE_MS = 25_000;
/** kill -9 variant: the ingress is killed this long into the outage (and started again when it is over). */
const INGRESS_KILL_AFTER_MS = 15_000;
/** After the last mention: what the outage held back must all be answered within this. */
const SETTLE_MS = 60_000;

interface Probe {
  at: number;
  who: string;
  status: number | string;
  body: string;
}

async function readyz(port: number): Promise<{ status: number | string; body: string }> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(1500) });
    return { status: res.status, body: (await res.text()).trim() };
  } catch (err) {
    return { status: "no answer", body: (err as Error).message };
  }
}

/** pino lines at warn or above logged within [from, to]: their messages. */
function warningsBetween(text: string, from: number, to: number): string[] {
  const out: string[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      const l = JSON.parse(line) as { level?: string | number; time?: string | number; msg?: string };
      const loud = typeof l.level === "number" ? l.level >= 40 : ["warn", "error", "fatal"].includes(l.level ?? "");
      const at = typeof l.time === "string" ? Date.parse(l.time) : (l.time ?? 0);
      if (loud && at >= from && at <= to) out.push(l.msg ?? "");
    } catch {
      // a partial line
    }
  }
  return out;
}

for (const variant of ["kill -9", "SIGSTOP"] as const) {
  describe(`losing quorum: ${variant} of two of three NATS nodes for ${OUTAGE_MS / 1000} s under a Telegram ingress and three runners`, () => {
    let c: RunnerCluster;
    let telegram: FakeTelegram;
    let ingress: IngressProc;
    const ports = new Map<string, number>();
    const chats = tgChats(CHATS, -1_000_300);

    beforeAll(async () => {
      telegram = await startFakeTelegram();
      process.env.MOM_TEST_TG_TOKEN = telegram.token;
      c = await RunnerCluster.start(
        { leaseSeconds: 20, shutdownGraceSeconds: 5 },
        { cluster: 3, logsSubdir: `quorum-${variant === "kill -9" ? "kill9" : "sigstop"}`, adapters: tgAdapter(telegram) },
      );
      c.llm.setFallback(answering(200, 500));
      for (const name of ["r1", "r2", "r3"]) ports.set(name, await freePort());
      ports.set("ingress", await freePort());
      await Promise.all(["r1", "r2", "r3"].map((name) => c.addRunner({ MOM_HTTP_PORT: String(ports.get(name)) })));
      ingress = new IngressProc(c.dataDir, { MOM_TEST_TG_TOKEN: telegram.token, NATS_URL: "", MOM_HTTP_PORT: String(ports.get("ingress")) }, c.logsDir && join(c.logsDir, "ingress.log"));
      await ingress.start();
    }, 120_000);

    afterAll(async () => {
      for (const n of c?.cluster?.nodes ?? []) if (n.paused) n.resume();
      await ingress?.kill9();
      await c?.stop();
      await telegram?.close();
      delete process.env.MOM_TEST_TG_TOKEN;
    });

    it("holds what people send until it is stored, then answers every mention once, in order, and says so while it waits", async () => {
      const cluster = c.cluster!;
      await until("every runner's heartbeat", async () => (await c.loads()).size === 3, 30_000);
      const inStream = c.bus.subjects.stream("IN");
      const outStream = c.bus.subjects.stream("OUT");
      const mentions: Mention[] = [];
      let outageOver = false;
      let rounds = 0;
      const started = Date.now();
      const mentioning = mentionRoundRobin(telegram, chats, mentions, { everyMs: MENTION_EVERY_MS, minRounds: 4, maxRounds: 60, more: () => !outageOver, onRound: (n) => (rounds = n) });

      await sleep(5000); // answers flowing in every chat
      await cluster.waitForHealth(60_000);
      // Take down the leaders of both streams the ingress uses (and a third node if one leads both):
      // the survivor leads nothing and cannot elect a leader alone.
      const inLeader = await until(`a leader of ${inStream}`, () => cluster.leaderOf(inStream), 30_000);
      const outLeader = await until(`a leader of ${outStream}`, () => cluster.leaderOf(outStream), 30_000);
      const victims = [...new Set([inLeader, outLeader, ...cluster.nodes.map((n) => n.name)])].slice(0, 2);
      const survivor = cluster.nodes.find((n) => !victims.includes(n.name))!.name;
      await until("a run in flight", async () => {
        for (const r of c.runners) if ((await c.runsInFlight(r.name, 0).catch(() => [])).length > 0) return true;
        return undefined;
      }, 30_000);

      const downAt = Date.now();
      if (variant === "kill -9") await Promise.all(victims.map((v) => cluster.node(v).kill9()));
      else for (const v of victims) cluster.node(v).pause();
      // No update sent from now on can be stored until the nodes are back: a write needs two of three.
      const firstUnstorable = telegram.lastUpdateId + 1;

      const probes: Probe[] = [];
      const probing = (async () => {
        while (!outageOver) {
          const t = Date.now();
          await Promise.all([...ports].map(async ([who, port]) => probes.push({ at: t, who, ...(await readyz(port)) })));
          await sleep(1000);
        }
      })();
      // A zone outage takes the ingress's pod too: with kill -9, the ingress dies 15 s into it, holding
      // messages it could not store, and a new one starts once the cluster is back. What it had
      // not stored must still be with Telegram for the new one.
      let crash: IngressCrash | undefined;
      let firstIngressLog = "";
      if (variant === "kill -9") {
        await sleep(INGRESS_KILL_AFTER_MS);
        crash = { killedAt: Date.now(), lastIdAtKill: new Map(chats.map((ch) => [ch.id, Math.max(0, ...telegram.botMessages(ch.id, { includeDeleted: true }).map((b) => b.message_id))])) };
        await ingress.kill9();
        firstIngressLog = ingress.out.text;
        await sleep(OUTAGE_MS - INGRESS_KILL_AFTER_MS);
      } else await sleep(OUTAGE_MS);
      const backAt = Date.now();
      if (variant === "kill -9") await Promise.all(victims.map((v) => cluster.node(v).start()));
      else for (const v of victims) cluster.node(v).resume();
      await cluster.waitForHealth(60_000);
      const healthyAt = Date.now();
      if (crash) await ingress.start();
      await sleep(6000); // mentions after the outage too: answered behind what it held
      outageOver = true;
      await Promise.all([mentioning, probing]);
      const mentionsEnd = Date.now();

      await settleAnswers(telegram, mentions, SETTLE_MS);
      const settledMs = Date.now() - mentionsEnd - 3000;
      // Runners without a heartbeat for 3/4 of a lease (15 s) set their channels down, by design
      // (fencing): a run cut off then says so and is run again; allowed, and printed.
      const { problems, leftovers, logs, onBus, rows, resumed, crashCasualties } = checkPlatform(telegram, c, chats, mentions, started, { allowResumed: true, crash });

      // The ingress held Telegram's updates: no getUpdates made while the cluster had no quorum
      // confirmed (offset past) an update sent during it. Telegram forgets a confirmed update; had
      // the process died then, that message would have been lost.
      const confirmedUnstored = telegram.calls
        .filter((x) => x.method === "getUpdates" && x.at >= downAt && x.at < backAt && Number(x.params.offset ?? 0) > firstUnstorable)
        .map((x) => `getUpdates at ${x.at - downAt} ms into the outage confirmed updates up to ${Number(x.params.offset) - 1} (the first sent during the outage: ${firstUnstorable})`);

      // Loud, not silent: warnings from the ingress and from every runner while the cluster was down.
      const until2 = backAt + 5000;
      const warned = {
        ingress: warningsBetween(firstIngressLog + ingress.out.text, downAt, until2),
        ...Object.fromEntries(c.runners.map((r) => [r.name, warningsBetween(r.err.text, downAt, until2)])),
      };
      const silent = Object.entries(warned).filter(([, w]) => w.length === 0).map(([who]) => who);
      const notReady = (who: string) => probes.filter((p) => p.who === who && p.status !== 200);
      const readiness = [...ports.keys()].map((who) => {
        const bad = notReady(who);
        return `${who} /readyz: ${bad.length}/${probes.filter((p) => p.who === who).length} probes not ready${bad.length ? `, e.g. ${bad[0]!.status} ${bad[0]!.body.slice(0, 160)}` : ""}`;
      });

      const summary = [
        `quorum-loss (${variant}) ${new Date().toISOString()}: ${rounds} rounds x ${CHATS} chats = ${mentions.length} mentions, one every ${MENTION_EVERY_MS} ms; all shown ${settledMs} ms after the last (test ${Math.round((Date.now() - started) / 1000)} s)`,
        `${Math.round((downAt - started) / 100) / 10} s: ${variant} of ${victims.join(", ")} (${inStream} leader ${inLeader}, ${outStream} leader ${outLeader}); ${survivor} alone for ${backAt - downAt} ms; cluster healthy again ${healthyAt - backAt} ms after they were back`,
        `mentions sent during the outage: ${mentions.filter((m) => m.at >= downAt && m.at < backAt).length}`,
        ...(crash ? [`ingress kill -9 ${crash.killedAt - downAt} ms into the outage, started again after it; what its crash cut off (allowed): ${crashCasualties.length}`, ...crashCasualties] : []),
        ...readiness,
        ...Object.entries(warned).map(([who, w]) => `${who}: ${w.length} warnings during the outage, first: ${JSON.stringify([...new Set(w)].slice(0, 3))}`),
        ...rows,
        ...(onBus.length ? ["the test's ordered-consumer reader of mom.out (not asserted) misses answers:", ...onBus] : []),
        `runs cut off when their runners set their channels down, resumed and answered: ${resumed.length}`,
        ...resumed,
      ].join("\n");
      console.log(summary);
      if (c.logsDir) writeFileSync(join(c.logsDir, "platform.json"), JSON.stringify({ mentions, probes, chats: chats.map((ch) => ({ id: ch.id, messages: telegram.botMessages(ch.id, { includeDeleted: true }) })) }, null, 2));

      // Not asserted here, printed: the test's own reader of mom.out (`Bus.follow`, an ordered consumer, as the console
      // reads it) did not come back after the kill -9 variant in 2 of 6 runs while the ingress's
      // durable did (docs/scaling.md, limits); what people see is asserted above it.
      expect({ problems, leftovers, logs, confirmedUnstored, silent }).toEqual({ problems: [], leftovers: [], logs: [], confirmedUnstored: [], silent: [] });
      expect(ingress.alive()).toBe(true);
      for (const r of c.runners) expect({ runner: r.name, exit: r.child.exitCode ?? r.child.signalCode }).toEqual({ runner: r.name, exit: null });
      // Not ready while it lasted, each of them (not "ready" throughout an outage).
      expect([...ports.keys()].filter((who) => notReady(who).length === 0)).toEqual([]);
    }, 240_000);
  });
}
