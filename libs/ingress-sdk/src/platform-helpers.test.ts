import { describe, expect, it } from "@jest/globals";
import { pino } from "pino";
import { catchUpFromHistory } from "./catch-up.js";
import { Directory } from "./directory.js";
import type { PlatformMessage } from "./platform.js";
import { backoffMs, waitOutRateLimits } from "./rate-limits.js";
import { replyText, serveWebhook } from "./webhook-server.js";

const log = pino({ level: "silent" });

describe("serveWebhook", () => {
  it("answers through handle, turns a rejection into its status, and refuses a port in use", async () => {
    const server = await serveWebhook({
      port: 0,
      host: "127.0.0.1",
      log,
      handle: async (req, res) => {
        if (req.url === "/big") throw Object.assign(new Error("request entity too large"), { status: 413 });
        if (req.url === "/boom") throw new Error("boom");
        replyText(res, 200, "ok");
      },
    });
    try {
      const base = `http://127.0.0.1:${server.port}`;
      expect(await fetch(`${base}/`).then((r) => r.text())).toBe("ok");
      const big = await fetch(`${base}/big`);
      expect([big.status, await big.text()]).toEqual([413, "too large"]);
      expect((await fetch(`${base}/boom`)).status).toBe(500);
      expect(server.listening()).toBe(true);
      await expect(serveWebhook({ port: server.port, host: "127.0.0.1", log, handle: async () => {} })).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await server.close();
    }
    expect(server.listening()).toBe(false);
  });
});

const limitedErr = (ms: number) => ({ statusCode: 429, retryAfterMs: ms });
const retryAfterMs = (err: unknown) => ((err as { statusCode?: number }).statusCode === 429 ? (err as { retryAfterMs: number }).retryAfterMs : undefined);

describe("waitOutRateLimits", () => {
  it("waits as long as each refusal asks, then returns the call's result", async () => {
    const waits: number[] = [];
    let calls = 0;
    const result = await waitOutRateLimits(
      async () => {
        if (++calls < 3) throw limitedErr(calls * 10);
        return "ok";
      },
      { retryAfterMs, limited: (ms) => waits.push(ms) },
    );
    expect([result, calls, waits]).toEqual(["ok", 3, [10, 20]]);
  });

  it("another failure, and the last try's refusal, are the caller's (as thrown, non-Errors too)", async () => {
    const other = { statusCode: 500 };
    await expect(waitOutRateLimits(() => Promise.reject(other), { retryAfterMs, limited: () => {} })).rejects.toBe(other);
    let calls = 0;
    const refusal = limitedErr(1);
    await expect(waitOutRateLimits(() => (calls++, Promise.reject(refusal)), { retryAfterMs, limited: () => {}, maxTries: 3 })).rejects.toBe(refusal);
    expect(calls).toBe(3);
  });

  it("gives up once giveUpAfterMs would be passed, and backs off by doubling", async () => {
    let calls = 0;
    const refusal = limitedErr(40);
    await expect(waitOutRateLimits(() => (calls++, Promise.reject(refusal)), { retryAfterMs, limited: () => {}, giveUpAfterMs: 100 })).rejects.toBe(refusal);
    expect(calls).toBe(3);
    expect([1, 2, 3, 8, 20].map(backoffMs)).toEqual([500, 1000, 2000, 30_000, 30_000]);
  });

  it("an aborted signal ends the wait at once with the refusal (a download given up does not sit out a minute's Retry-After)", async () => {
    const abort = new AbortController();
    const refusal = limitedErr(60_000);
    let calls = 0;
    const started = Date.now();
    const waiting = waitOutRateLimits(() => (calls++, Promise.reject(refusal)), { retryAfterMs, limited: () => setTimeout(() => abort.abort(), 20), signal: abort.signal });
    await expect(waiting).rejects.toBe(refusal);
    expect([calls, Date.now() - started < 5000]).toEqual([1, true]);
  });
});

describe("Directory", () => {
  it("names people by id and ids by name (caseless where the platform is), keeps a deactivated account's name unused", () => {
    const d = new Directory({ log, caseless: true });
    d.learn({ id: "1", username: "Ana", isBot: false });
    d.learn({ id: "2", username: "old", isBot: false }, false);
    expect([d.get("1")?.username, d.idOf("ana"), d.idOf("ANA"), d.get("2")?.username, d.idOf("old")]).toEqual(["Ana", "1", "1", "old", undefined]);
    const exact = new Directory({ log });
    exact.learn({ id: "3", username: "Bo", isBot: false });
    expect([exact.idOf("Bo"), exact.idOf("bo")]).toEqual(["3", undefined]);
  });

  it("looks a newcomer up once for callers at the same time; a failed lookup names them by id and is tried again", async () => {
    let calls = 0;
    let fail = true;
    const d: Directory = new Directory({
      log,
      lookup: async (id) => {
        calls++;
        await new Promise((r) => setTimeout(r, 10));
        if (fail) throw new Error("users.info: ratelimited");
        return d.learn({ id, username: "carol", isBot: false });
      },
    });
    expect(await Promise.all([d.resolve("9"), d.resolve("9")])).toEqual([{ id: "9", username: "9", isBot: false }, { id: "9", username: "9", isBot: false }]);
    expect(calls).toBe(1);
    fail = false;
    expect((await d.resolve("9")).username).toBe("carol");
    expect([calls, d.idOf("carol"), (await d.resolve("9")).username, calls]).toEqual([2, "9", "carol", 2]);
  });
});

describe("catchUpFromHistory", () => {
  it("asks each chat's history after the newest id mom has of it; missed mentions are answered only while fresh, flagged backfilled, never refused", async () => {
    const stored = (seq: number, id: string) => ({ stream: "MOM_IN", seq, subject: `mom.in.x.C${seq}`, time: new Date(), text: JSON.stringify({ id }) });
    const history = {
      // C1: a scheduled event last, two of the platform's ids before it (the newer one stored first); C2: none.
      lastOfEachChannel: async () => [{ channelId: "C1", last: stored(3, "sched") }, { channelId: "C2", last: stored(5, "sched") }],
      lastOf: async () => undefined,
      channelFrom: async (chat: string) => (chat === "C1" ? [stored(1, "9"), stored(2, "7"), stored(3, "sched")] : [stored(5, "sched")]),
    };
    const asked: string[] = [];
    const caught: PlatformMessage[] = [];
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    const inbound = {
      catchUp: async (chat: string, missed: () => Promise<PlatformMessage[]>) => {
        const got = await missed();
        caught.push(...got);
        if (chat === "C2") done();
        return got.length;
      },
    } as unknown as Parameters<typeof catchUpFromHistory>[0]["inbound"];
    const msg = (id: string, minutesAgo: number): PlatformMessage => ({ id, channelId: "C1", timestamp: new Date(Date.now() - minutesAgo * 60_000).toISOString(), sender: { id: "u", username: "u", isBot: false }, text: "hi", isMention: true, refuse: async () => "told" });
    await catchUpFromHistory({ history, inbound, log }, {
      idOf: (m) => (typeof m.id === "string" && /^\d+$/.test(m.id) ? m.id : undefined),
      compare: (a, b) => Number(a) - Number(b),
      after: async (chat, after) => {
        asked.push(`${chat}>${after}`);
        return [msg("10", 1), undefined, msg("11", 30)];
      },
    });
    await finished;
    expect(asked).toEqual(["C1>9"]);
    expect(caught.map((m) => [m.id, m.isMention, m.metadata])).toEqual([["10", true, { backfilled: true }], ["11", false, { backfilled: true }]]);
    expect(await caught[0]!.refuse!("no")).toBeUndefined();
  });
});
