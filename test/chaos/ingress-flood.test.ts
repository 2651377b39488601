// A misbehaving ingress cannot hurt the rest: one adapter floods the bus (~1,000 messages/s for
// 3 s over 10 channels) while another adapter's people keep mentioning mom. Every mention of the
// other adapter is answered once, in order, without waiting for the flood; every flooded message
// is logged once in its own channel (nothing lost there either).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { ChannelMessage } from "@mom/contracts";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { answering, expectExactlyOnceInOrder, question, RunnerCluster } from "../support/runner-cluster.js";

const FLOOD_CHANNELS = 10;
const FLOOD_SECONDS = 3;
const FLOOD_PER_SECOND = 1000;
const CLI_CHANNELS = 10;
const PER_CHANNEL = 4;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("one adapter flooding the bus", () => {
  let c: RunnerCluster;
  beforeAll(async () => {
    c = await RunnerCluster.start({ leaseSeconds: 20 }, { adapters: { cli: { type: "cli" }, flood: { type: "external", platform: "flood" } } });
    c.llm.setFallback(answering(100, 300));
    await Promise.all([c.addRunner(), c.addRunner()]);
  }, 60_000);
  afterAll(async () => {
    await c?.stop();
  });

  it("neither stops another adapter's channels nor loses its own messages", async () => {
    const floodSubject = (ch: number) => c.bus.subjects.channel("in", { adapter: "flood", channelId: `f${ch}` });
    const flooding = (async () => {
      let n = 0;
      const started = Date.now();
      for (let tick = 0; tick < FLOOD_SECONDS * 10; tick++) {
        const batch: Promise<unknown>[] = [];
        for (let k = 0; k < FLOOD_PER_SECOND / 10; k++, n++) {
          const ch = n % FLOOD_CHANNELS;
          const m: ChannelMessage = { id: `flood-${n}`, channelId: `f${ch}`, timestamp: new Date().toISOString(), sender: { id: "spam", username: "spam", isBot: false }, text: `noise ${n}`, attachments: [], isMention: false };
          batch.push(c.bus.publish(floodSubject(ch), m, `flood:f${ch}:${m.id}`, { retryForMs: 30_000 }));
        }
        await Promise.all(batch);
        await sleep(Math.max(0, started + (tick + 1) * 100 - Date.now()));
      }
      return { sent: n, seconds: (Date.now() - started) / 1000 };
    })();

    const asked = new Map<string, number>();
    for (let k = 1; k <= PER_CHANNEL; k++) {
      for (let i = 0; i < CLI_CHANNELS; i++) {
        asked.set(question(`c${i}`, k), Date.now());
        await c.publish(`c${i}`, k);
        await sleep(40);
      }
    }
    const flood = await flooding;
    await c.waitForAnswers(CLI_CHANNELS * PER_CHANNEL, 90_000);
    await sleep(1000);
    expectExactlyOnceInOrder(c, Array.from({ length: CLI_CHANNELS }, (_, i) => `c${i}`), PER_CHANNEL);

    // How long each mention waited for its answer while the flood went on.
    const waits: number[] = [];
    for (const p of c.published) {
      const m = /^a (\S+):(\d+)$/.exec(p.text);
      const at = m ? asked.get(question(m[1]!, Number(m[2]))) : undefined;
      if (at !== undefined) waits.push(p.at - at);
    }
    waits.sort((a, b) => a - b);
    const p50 = waits[Math.floor(waits.length / 2)]!;
    const max = waits.at(-1)!;
    console.log(`ingress-flood: ${flood.sent} flood messages in ${flood.seconds.toFixed(1)} s; other adapter's answers waited p50 ${p50} ms, max ${max} ms`);
    expect(waits).toHaveLength(CLI_CHANNELS * PER_CHANNEL);
    expect(max).toBeLessThan(20_000);

    // Every flooded message logged once in its own channel, none answered.
    const perChannel = flood.sent / FLOOD_CHANNELS;
    const logged = (ch: number) => {
      const file = join(c.dataDir, "workspace/channels/flood", `f${ch}`, "log.jsonl");
      return existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { id: string; isBot: boolean }) : [];
    };
    for (let i = 0; i < 600 && Array.from({ length: FLOOD_CHANNELS }, (_, ch) => logged(ch).length).some((n) => n < perChannel); i++) await sleep(100);
    for (let ch = 0; ch < FLOOD_CHANNELS; ch++) {
      const log = logged(ch);
      const ids = log.map((e) => e.id);
      expect({ ch, lines: log.length, unique: new Set(ids).size, bot: log.filter((e) => e.isBot).length }).toEqual({ ch, lines: perChannel, unique: perChannel, bot: 0 });
    }
  }, 180_000);
});
