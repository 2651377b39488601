import { describe, expect, it } from "@jest/globals";
import type { ChannelRecord } from "@mom/contracts";
import { pino } from "pino";
import { type ChannelDirectory, RecordConflict, type Versioned } from "./channel-directory.js";
import { ChannelLedger, ChannelLost } from "./channel-ledger.js";

/** The compare-and-set of ChannelDirectory over a plain variable; `steal()` is another runner's write. */
function store(record: ChannelRecord) {
  let v: Versioned = { record, revision: 1 };
  const dir = {
    async write(_key: string, next: ChannelRecord, revision: number) {
      if (revision !== v.revision) throw new RecordConflict("changed");
      v = { record: next, revision: v.revision + 1 };
      if (lostAcks > 0) {
        lostAcks--;
        throw new Error("TIMEOUT"); // stored, but the ack never came back
      }
      return v;
    },
    async read() {
      return v;
    },
    get() {
      return v;
    },
  } as unknown as ChannelDirectory;
  let lostAcks = 0;
  return {
    dir,
    now: () => v,
    steal: () => (v = { record: { ...v.record, owner: "other" }, revision: v.revision + 1 }),
    loseNextAck: () => (lostAcks = 1),
  };
}

const base: ChannelRecord = { owner: "me", doneSeq: 10, streamCreated: "t0" };
const log = pino({ level: "silent" });

describe("ChannelLedger", () => {
  it("moves doneSeq to just before the oldest message still in hand", async () => {
    const s = store(base);
    const l = new ChannelLedger(s.dir, "cli.x", s.now(), log, () => {});
    expect(l.resumeSeq).toBe(11);
    expect(l.begin(10)).toBe(false); // already done: a re-read
    for (const seq of [11, 12, 13]) expect(l.begin(seq)).toBe(true);
    await l.runStarting({ seq: 11, messageId: "m11", runId: "r1", crashes: 0 });
    expect(s.now().record.run).toEqual({ seq: 11, messageId: "m11", runId: "r1", crashes: 0, phase: "running" });
    await l.done(12); // a plain message logged during the run: nothing moves past 11
    await l.flush();
    expect(s.now().record.doneSeq).toBe(10);
    await l.done(11);
    await l.flush();
    expect(s.now().record).toEqual({ ...base, doneSeq: 12 });
    await l.done(13);
    await l.release(null, false);
    expect(s.now().record).toEqual({ ...base, owner: null, doneSeq: 13 });
  });

  it("records a new run together with the end of the one before it", async () => {
    const s = store(base);
    const l = new ChannelLedger(s.dir, "cli.x", s.now(), log, () => {});
    l.begin(11);
    l.begin(12);
    await l.runStarting({ seq: 11, messageId: "m11", runId: "r1", crashes: 0 });
    await l.done(11); // not saved yet (debounced)...
    await l.runStarting({ seq: 12, messageId: "m12", runId: "r2", crashes: 0 });
    // ...but the next run's record carries it: a takeover now starts at 12, resuming r2.
    expect(s.now().record).toMatchObject({ doneSeq: 11, run: { seq: 12, runId: "r2" } });
  });

  it("marks a run handed over, and keeps it for the next owner", async () => {
    const s = store(base);
    const l = new ChannelLedger(s.dir, "cli.x", s.now(), log, () => {});
    l.begin(11);
    await l.runStarting({ seq: 11, messageId: "m11", runId: "r1", crashes: 1 });
    await l.handedOver();
    await l.release("next", false);
    expect(s.now().record).toEqual({ ...base, owner: "next", run: { seq: 11, messageId: "m11", runId: "r1", crashes: 1, phase: "handed-over" } });
    expect(new ChannelLedger(s.dir, "cli.x", s.now(), log, () => {}).interrupted?.runId).toBe("r1");
  });

  it("says it is giving the channel up from the release on, so the record naming the next owner reads as no loss and nothing more is written; a release that loses the race is a loss", async () => {
    const s = store(base);
    const l = new ChannelLedger(s.dir, "cli.x", s.now(), log, () => {});
    expect(l.releasing).toBe(false);
    const released = l.release("next", false);
    expect(l.releasing).toBe(true);
    // From the release on, the channel's files are not ours to write.
    expect(() => l.assertOwner()).toThrow(/was handed over by this runner/);
    await released;
    expect(l.releasing).toBe(true);

    const t = store(base);
    const m = new ChannelLedger(t.dir, "cli.x", t.now(), log, () => {});
    t.steal();
    await expect(m.release(null, false)).rejects.toBeInstanceOf(ChannelLost);
    expect(m.releasing).toBe(false);
  });

  it("forgets a recorded run that never began, keeping what is done", async () => {
    const s = store(base);
    const l = new ChannelLedger(s.dir, "cli.x", s.now(), log, () => {});
    l.begin(11);
    l.begin(12);
    await l.runStarting({ seq: 11, messageId: "m11", runId: "r1", crashes: 0 });
    await l.done(11);
    await l.runStarting({ seq: 12, messageId: "m12", runId: "r2", crashes: 0 });
    await l.runNotStarted();
    await l.release("next", true);
    // The next owner reads 12 again as a new message: no interrupted run, no crash counted.
    expect(s.now().record).toEqual({ ...base, owner: "next", doneSeq: 11 });
    expect(new ChannelLedger(s.dir, "cli.x", s.now(), log, () => {}).interrupted).toBeUndefined();
  });

  it("takes a retried save that conflicts with its own timed-out write as saved, not as a takeover", async () => {
    const s = store(base);
    let lost = 0;
    const l = new ChannelLedger(s.dir, "cli.x", s.now(), log, () => lost++);
    l.begin(11);
    s.loseNextAck();
    await l.runStarting({ seq: 11, messageId: "m11", runId: "r1", crashes: 0 });
    expect(lost).toBe(0);
    expect(s.now().record.run?.runId).toBe("r1");
    await l.done(11);
    await l.flush(); // goes on from the stored revision
    expect(s.now().record).toEqual({ ...base, doneSeq: 11 });
    expect(lost).toBe(0);
  });

  it("stops writing once another runner changed the record", async () => {
    const s = store(base);
    let lost = 0;
    const l = new ChannelLedger(s.dir, "cli.x", s.now(), log, () => lost++);
    l.begin(11);
    s.steal();
    await expect(l.runStarting({ seq: 11, messageId: "m11", runId: "r1", crashes: 0 })).rejects.toBeInstanceOf(ChannelLost);
    expect(lost).toBe(1);
    expect(l.isLost).toBe(true);
    await expect(l.release(null, false)).rejects.toBeInstanceOf(ChannelLost);
    expect(s.now().record.owner).toBe("other");
  });

  it("fences at the first write after a takeover it has seen, before any save of progress", () => {
    const s = store(base);
    let lost = 0;
    const l = new ChannelLedger(s.dir, "cli.x", s.now(), log, () => lost++);
    expect(() => l.assertOwner()).not.toThrow();
    s.steal();
    expect(() => l.assertOwner()).toThrow(ChannelLost);
    expect(lost).toBe(1);
    expect(l.isLost).toBe(true);
    expect(() => l.assertOwner()).toThrow(ChannelLost);
    expect(lost).toBe(1);
  });
});
