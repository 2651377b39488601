import { describe, expect, it } from "@jest/globals";
import { spawnNatsServer } from "@mom/testing";
import { openRecordStream, type RecordStream, type StreamRecord } from "./record-stream.js";
import { busesOnTestNats, sleep, waitFor } from "./test-support/helpers.js";
import { connectionOf } from "./bus.js";

// Spawned (never NATS_URL): one test restarts the server.
const { buses, server } = busesOnTestNats(spawnNatsServer);

async function ledger(): Promise<{ stream: RecordStream; bus: Awaited<ReturnType<typeof buses.open>> }> {
  const bus = await buses.open({ reconnectTimeWaitMs: 200 });
  const stream = await openRecordStream(bus, { key: "USAGE", token: "usage", maxAgeMs: 3600_000 });
  return { stream, bus };
}

async function append(stream: RecordStream, ns: number[]): Promise<void> {
  for (const n of ns) await stream.append("cli.local", { n }, `r${n}`);
}

/** Rejects when `p` has not settled within `ms` (a hang is the bug these tests are about). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, sleep(ms).then(() => Promise.reject(new Error(`${what} not within ${ms} ms`)))]);
}

/** A moment after everything appended so far: the server stamps records with its own clock, this host's. */
async function afterNow(): Promise<Date> {
  await sleep(20);
  const since = new Date();
  await sleep(20);
  return since;
}

function follower(stream: RecordStream, since: Date) {
  const seen: number[] = [];
  const started = stream.follow(since, (r: StreamRecord) => void seen.push((r.data as { n: number }).n));
  return { seen, started };
}

describe("record stream follow()", () => {
  it("is caught up at once when every record is older than the start, and then delivers new ones", async () => {
    const { stream } = await ledger();
    await append(stream, [1, 2, 3]);
    const { seen, started } = follower(stream, await afterNow());
    const f = await started;
    await within(f.caughtUp, 2000, "caught up");
    expect(seen).toEqual([]);
    await append(stream, [4]);
    await waitFor(() => seen.length === 1, 5000, "the record appended after the start");
    expect(seen).toEqual([4]);
    await f.stop();
  });

  it("is caught up at once on an empty stream, and then delivers new ones", async () => {
    const { stream } = await ledger();
    const { seen, started } = follower(stream, new Date(Date.now() - 3600_000));
    const f = await started;
    await within(f.caughtUp, 2000, "caught up");
    await append(stream, [1]);
    await waitFor(() => seen.length === 1, 5000, "the first record");
    await f.stop();
  });

  it("is caught up at once on a purged stream (last sequence above zero, no records)", async () => {
    const { stream, bus } = await ledger();
    await append(stream, [1, 2]);
    await connectionOf(bus).jsm.streams.purge(stream.stream);
    const info = await connectionOf(bus).jsm.streams.info(stream.stream);
    expect([info.state.last_seq, info.state.messages]).toEqual([2, 0]);
    const { seen, started } = follower(stream, new Date(Date.now() - 3600_000));
    const f = await started;
    await within(f.caughtUp, 2000, "caught up");
    await append(stream, [3]);
    await waitFor(() => seen.length === 1, 5000, "the record appended after the purge");
    expect(seen).toEqual([3]);
    await f.stop();
  });

  it("delivers every record at or after the start before it is caught up, none before it", async () => {
    const { stream } = await ledger();
    await append(stream, [1, 2]);
    const since = await afterNow();
    await append(stream, [3, 4, 5]);
    const { seen, started } = follower(stream, since);
    const f = await started;
    await within(f.caughtUp, 2000, "caught up");
    expect(seen).toEqual([3, 4, 5]);
    await append(stream, [6]);
    await waitFor(() => seen.length === 4, 5000, "the record appended after the start");
    await f.stop();
  });

  it("says what it waits for while the replay takes long", async () => {
    const { stream, bus } = await ledger();
    // Enough records that the replay spans many pull round trips: the warning's timer gets a turn.
    const count = 5000;
    for (let i = 0; i < count; i += 500) {
      await Promise.all(Array.from({ length: 500 }, (_, j) => connectionOf(bus).js.publish(stream.subject("cli.local"), JSON.stringify({ n: i + j }))));
    }
    const f = await stream.follow(new Date(Date.now() - 3600_000), () => {}, { warnEveryMs: 1 });
    await within(f.caughtUp, 20_000, "caught up");
    await f.stop();
    const warning = bus.logs.lines.find((l) => String(l.msg).startsWith("still replaying"));
    expect(warning).toMatchObject({ stream: stream.stream, waitingForSeq: count });
    expect(warning?.msg).toMatch(/^still replaying .+ records since .+: \d+ delivered, \d+ to go/);
  });

  it("goes on following after a NATS restart (its consumer is re-made from where it was)", async () => {
    const { stream, bus } = await ledger();
    await append(stream, [1]);
    const since = await afterNow();
    await append(stream, [2]);
    const { seen, started } = follower(stream, since);
    const f = await started;
    await within(f.caughtUp, 2000, "caught up");
    await server().restart!();
    await bus.publish(stream.subject("cli.local"), { n: 3 }, "r3", { retryForMs: 20_000, timeoutMs: 1000 });
    await waitFor(() => seen.length === 2, 20_000, "the record appended after the restart");
    expect(seen).toEqual([2, 3]);
    await f.stop();
  });
});
