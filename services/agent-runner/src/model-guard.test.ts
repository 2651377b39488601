import { afterAll, afterEach, beforeAll, describe, expect, it } from "@jest/globals";
import type { ModelAccess } from "@mom/agent";
import { Bus } from "@mom/bus";
import { loadConfig } from "@mom/config";
import type { UsageRecord } from "@mom/contracts";
import { spawnNatsServer, type TestNats, uniqueNamespace, usageRecord } from "@mom/testing";
import { monthStart, openLedgerStream } from "@mom/usage";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { ModelGuard } from "./model-guard.js";

// The spend limits at the edges of their periods (docs/auth.md#spend-limits), on a real NATS and
// a clock the tests set. Spawned (never NATS_URL): one test takes the server away for 7 s.
let nats: TestNats;
beforeAll(async () => {
  nats = await spawnNatsServer();
});
afterAll(() => nats?.stop());

const opened: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of opened.splice(0).reverse()) await close();
});

type Model = Parameters<ModelAccess["settled"]>[2];
const model = { provider: "fake", id: "fake-model" } as Model;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function connect(namespace: string): Promise<Bus> {
  const bus = await Bus.connect({ url: nats.url, name: "model-guard-test", namespace, logger: pino({ level: "silent" }), reconnectTimeWaitMs: 200, drainTimeoutMs: 3000 });
  opened.push(() => bus.drain());
  return bus;
}

/** A runner's guard for channel cli/local, reading the limits on `clock.now`; its namespace's ledger is `ledger`. */
async function guardAt(clock: { now: Date }, config: object, namespace = uniqueNamespace()) {
  const dataDir = mkdtempSync(join(tmpdir(), "mom-guard-"));
  writeFileSync(join(dataDir, "config.json"), JSON.stringify({ nats: { url: nats.url, namespace }, ...config }));
  opened.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  const bus = await connect(namespace);
  const logs: Record<string, unknown>[] = [];
  const log = pino({ level: "info" }, { write: (s: string) => void logs.push(JSON.parse(s)) });
  const guard = await ModelGuard.open(loadConfig(dataDir, {}), bus, log, { now: () => clock.now });
  opened.push(() => guard.close());
  const access = guard.forChannel({ ref: { adapter: "cli", channelId: "local" }, key: "cli/local", store: undefined as never, currentRun: () => undefined, hasDefault: () => true });
  /** One model call of `tokens` tokens, settled (and so recorded) now; `estimated`: an answer stopped mid-stream. */
  const call = (tokens: number, estimated?: boolean) =>
    access.settled("env", { role: "assistant", stopReason: estimated ? "aborted" : "stop", usage: { input: tokens, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: tokens, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } } } as never, model, estimated);
  /** Whether a call needing `tokens` more may be made now (undefined) or the limit's message. */
  const admit = (tokens: number) => access.admit(() => ({ inputTokens: tokens, outputTokens: 0, usd: 0 }), model);
  const spent = (period: "day" | "month") => guard.ledger.totals.spent(period, clock.now, { kind: "global" }).tokens;
  return { guard, bus, namespace, access, call, admit, spent, logs };
}


/** Rejects when `p` has not settled within `ms`: a guard that never opens is what these tests are about. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, sleep(ms).then(() => Promise.reject(new Error(`${what} not within ${ms} ms`)))]);
}

async function eventually<T>(f: () => Promise<T>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await f();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(200);
    }
  }
}

async function waitFor(pred: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(20);
  }
}

// The first of a month still ahead of the NATS server's clock, so that every record the server
// stores now is older than the month the guard replays (2026-12-01 when this was written).
const nextMonth = monthStart(new Date(Date.now() + 32 * 24 * 3600_000));
const lastMonthTs = new Date(nextMonth.getTime() - 10 * 24 * 3600_000).toISOString();
const limits = { limits: { global: { day: { tokens: 1500 }, month: { tokens: 2500 } } } };

describe("spend limits at the turn of a day and a month", () => {
  for (const [what, at] of [
    ["30 s into", new Date(nextMonth.getTime() + 30_000)],
    ["at midnight UTC of", nextMonth],
  ] as const) {
    it(`a guard started ${what} a month's first day, with only last month's records, is ready at once with nothing spent`, async () => {
      const namespace = uniqueNamespace();
      const ledger = await openLedgerStream(await connect(namespace));
      for (let i = 0; i < 3; i++) await ledger.append("cli.local", usageRecord(`nov-${i}`, lastMonthTs, 1000), `nov-${i}`);
      const clock = { now: at };
      const g = await within(guardAt(clock, limits, namespace), 5000, "the guard");
      expect([g.spent("day"), g.spent("month")]).toEqual([0, 0]);
      expect(await g.admit(1400)).toBeUndefined();
      // And the ledger is followed: another replica's call of today counts.
      await ledger.append("cli.local", usageRecord("other-replica", at.toISOString(), 1000), "other-replica");
      await waitFor(() => g.spent("day") === 1000, 5000, "the other replica's record");
      expect(await g.admit(1400)).toMatch(/^Token limit reached: mom overall has used 1,000 tokens of its 1,500 tokens daily budget/);
    });
  }

  it("a guard on an empty ledger, and on a purged one, is ready at once and counts the next call", async () => {
    const clock = { now: new Date(nextMonth.getTime() + 30_000) };
    const empty = await within(guardAt(clock, limits), 5000, "the guard on an empty ledger");
    await empty.call(1000);
    expect(empty.spent("month")).toBe(1000);

    const namespace = uniqueNamespace();
    const bus = await connect(namespace);
    const ledger = await openLedgerStream(bus);
    await ledger.append("cli.local", usageRecord("old", lastMonthTs, 1000), "old");
    await ledger.append("cli.local", usageRecord("today", clock.now.toISOString(), 1000), "today");
    await bus.purgeStream(ledger.stream);
    const purged = await within(guardAt(clock, limits, namespace), 5000, "the guard on a purged ledger");
    expect(purged.spent("month")).toBe(0);
    await purged.call(1000);
    expect(purged.spent("month")).toBe(1000);
  });

  it("an answer stopped mid-stream counts against the limits at its estimate, and its record says it is one", async () => {
    const clock = { now: new Date(nextMonth.getTime() + 30_000) };
    const g = await guardAt(clock, limits);
    await g.call(900, true);
    await g.call(100);
    expect(g.spent("day")).toBe(1000);
    expect(await g.admit(1400)).toMatch(/^Token limit reached/);
    const records = (await (await openLedgerStream(g.bus)).readSince(new Date(0))).map((r) => r.data as UsageRecord);
    expect(records.map((r) => [r.totalTokens, r.estimated])).toEqual([[900, true], [100, undefined]]);
  });

  it("a guard started on Nov 30 23:59:50 counts December from zero after midnight UTC, and each day from zero", async () => {
    const clock = { now: new Date("2026-11-30T23:59:50Z") };
    const g = await guardAt(clock, limits);
    await g.call(1000);
    expect(await g.admit(600)).toMatch(/daily budget.*It resets at 2026-12-01 00:00 UTC/);

    clock.now = new Date("2026-12-01T00:00:05Z");
    expect([g.spent("day"), g.spent("month")]).toEqual([0, 0]);
    expect(await g.admit(600)).toBeUndefined();
    await g.call(1000);
    expect(await g.admit(600)).toMatch(/daily budget.*It resets at 2026-12-02 00:00 UTC/);

    clock.now = new Date("2026-12-02T00:00:01Z");
    expect([g.spent("day"), g.spent("month")]).toEqual([0, 1000]);
    await g.call(1000);
    clock.now = new Date("2026-12-03T00:00:01Z");
    // A new day, but December's budget is nearly gone.
    expect(await g.admit(600)).toMatch(/^Token limit reached: mom overall has used 2,000 tokens of its 2,500 tokens monthly budget.*It resets at 2027-01-01 00:00 UTC/);
  });

  it("a call recorded while NATS is away for 7 s lands in the ledger once and is counted once", async () => {
    const g = await guardAt({ now: new Date() }, { ...limits, runner: { publishRetrySeconds: 30 } });
    const down = nats.restart!(7000);
    await sleep(200); // the server is gone: the record is published into the outage
    await g.call(1000);
    await down;
    // The server may take a moment after the restart before its JetStream API answers.
    const records = await eventually(async () => (await (await openLedgerStream(g.bus)).readSince(new Date(0))).map((r) => (r.data as UsageRecord).totalTokens), 10_000);
    expect(records).toEqual([1000]);
    expect(g.logs.filter((l) => l.msg === "usage not recorded in the ledger")).toEqual([]);
    // Counted when the stream took it, and not again when the follower (re-made after the restart) brings it.
    await sleep(500);
    expect(g.spent("day")).toBe(1000);
  }, 30_000);

  it("without limits a call's record is not waited for by the run, but closing the guard (a runner's shutdown) waits for it", async () => {
    const g = await guardAt({ now: new Date() }, { runner: { publishRetrySeconds: 30 } });
    const down = nats.restart!(3000);
    await sleep(200);
    await within(g.call(700), 1000, "settled without limits");
    await within(g.guard.close(), 20_000, "the guard's close");
    // What the runner does next: its connection goes.
    await g.bus.drain();
    await down;
    const reader = await connect(g.namespace);
    const records = await eventually(async () => (await (await openLedgerStream(reader)).readSince(new Date(0))).map((r) => (r.data as UsageRecord).totalTokens), 10_000);
    expect(records).toEqual([700]);
    expect(g.logs.filter((l) => l.msg === "usage not recorded in the ledger")).toEqual([]);
  }, 30_000);
});
